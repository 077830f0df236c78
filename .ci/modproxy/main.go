// Command modproxy publishes modules from a working tree into a directory
// laid out as a Go module proxy (the GOPROXY protocol, served with
// GOPROXY=file://<dir>), so that a module outside the repository can
// require them at a version before it is tagged.
//
// Usage:
//
//	modproxy -dir <proxy dir> -version <vX.Y.Z> <module dir>...
//
// For each module directory it writes, under the module path's escaped
// form, @v/list, @v/<version>.info, @v/<version>.mod and @v/<version>.zip,
// the zip made as the Go command and the public proxies make it (nested
// modules, vendor and VCS directories left out), from the files in the
// directory as they are.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

func main() {
	dir := flag.String("dir", "", "the proxy directory, created if missing")
	version := flag.String("version", "", "the version to publish every module at, e.g. v0.1.0")
	flag.Parse()
	if *dir == "" || !semver.IsValid(*version) || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: modproxy -dir <proxy dir> -version <vX.Y.Z> <module dir>...")
		os.Exit(2)
	}
	for _, m := range flag.Args() {
		path, err := publish(*dir, *version, m)
		if err != nil {
			fmt.Fprintf(os.Stderr, "modproxy: %s: %v\n", m, err)
			os.Exit(1)
		}
		fmt.Printf("%s@%s from %s\n", path, *version, filepath.Clean(m))
	}
}

// publish writes the module in dir into the proxy at proxyDir as version,
// and returns its path.
func publish(proxyDir, version, dir string) (string, error) {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return "", fmt.Errorf("go.mod names no module")
	}
	mv := module.Version{Path: path, Version: version}
	if err := module.Check(path, version); err != nil {
		return "", err
	}
	escaped, err := module.EscapePath(path)
	if err != nil {
		return "", err
	}
	at := filepath.Join(proxyDir, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return "", err
	}
	base := filepath.Join(at, version)

	z, err := os.Create(base + ".zip")
	if err != nil {
		return "", err
	}
	if err := zip.CreateFromDir(z, mv, dir); err != nil {
		z.Close()
		return "", err
	}
	if err := z.Close(); err != nil {
		return "", err
	}
	if err := os.WriteFile(base+".mod", gomod, 0o644); err != nil {
		return "", err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(base+".info", info, 0o644); err != nil {
		return "", err
	}
	return path, addToList(filepath.Join(at, "list"), version)
}

// addToList adds version to the proxy's list of a module's versions.
func addToList(list, version string) error {
	old, err := os.ReadFile(list)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	versions := strings.Fields(string(old))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	semver.Sort(versions)
	return os.WriteFile(list, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}
