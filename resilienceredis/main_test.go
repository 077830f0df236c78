package resilienceredis_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// sharedAddr is the address of the redis-server TestMain starts for the
// tests that do not stop it.
var sharedAddr string

// quiet drops go-redis's log lines: the fault tests make it complain.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	srv, err := startServer("")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	sharedAddr = srv.addr
	code := m.Run()
	srv.stop()
	if code == 0 {
		// goleak's default options: the workers exit on their own.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// server is a redis-server the tests started.
type server struct {
	addr string
	dir  string
	cmd  *exec.Cmd
}

// startServer starts redis-server on 127.0.0.1, on addr if given or a free
// port, in a temporary directory, with nothing saved to disk, and waits
// until it answers.
func startServer(addr string) (*server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found on PATH: the tests of resilienceredis run against a real Redis; install it (Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis)")
	}
	if addr == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		addr = ln.Addr().String()
		ln.Close()
	}
	_, port, _ := net.SplitHostPort(addr)
	dir, err := os.MkdirTemp("", "resilienceredis-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &server{addr: addr, dir: dir, cmd: cmd}
	for range 200 { // up to 10 s
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			rc := redis.NewClient(&redis.Options{Addr: addr})
			_, perr := rc.Ping(ctxBG).Result()
			rc.Close()
			if perr == nil {
				return s, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.stop()
	log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
	return nil, fmt.Errorf("redis-server on %s did not answer: %s", addr, log)
}

// stop kills the server and removes its directory.
func (s *server) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	os.RemoveAll(s.dir)
}
