package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

type redisServer struct {
	addr string
	dir  string
	cmd  *exec.Cmd
}

// startRedis starts redis-server on a free port of 127.0.0.1, saving
// nothing, and waits until it accepts connections.
func startRedis() (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server not found on PATH (Debian/Ubuntu: apt-get install -y redis-server)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	dir, err := os.MkdirTemp("", "peertests-redis-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &redisServer{addr: addr, dir: dir, cmd: cmd}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		select {
		case <-ctx.Done():
			s.stop()
			return nil, fmt.Errorf("redis-server on %s did not start: %v", addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *redisServer) stop() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
	os.RemoveAll(s.dir)
}
