package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// download fetches module@version into the module cache and returns its
// directory.
func download(module, version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir() // outside any module: nothing to edit
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil && err == nil {
		err = jerr
	}
	if info.Error != "" {
		return "", errors.New(info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %v", module, version, err)
	}
	return info.Dir, nil
}

// readDeviations reads a DEVIATIONS.txt: one test a line, "TestName:
// reason"; blank lines and lines starting with # are comments.
func readDeviations(path string) ([]excluded, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var devs []excluded
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("%s:%d: want \"TestName: reason\", got %q", path, i+1, line)
		}
		devs = append(devs, excluded{strings.TrimSpace(name), strings.TrimSpace(reason)})
	}
	return devs, nil
}

// copyAdapter copies the adapter's Go files, not its tests, to work.
func copyAdapter(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, n))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, n), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
