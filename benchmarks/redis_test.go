package benchmarks

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/faf87a20/resilience/resilienceredis"
)

func TestMain(m *testing.M) {
	code := m.Run()
	stopRedis()
	os.Exit(code)
}

// The redis-server of the Redis rows: started on 127.0.0.1 by the first
// row that needs it, in a temporary directory, stopped by TestMain.
var (
	redisOnce sync.Once
	redisAddr string
	redisCmd  *exec.Cmd
	redisDir  string
	redisErr  error
)

func startRedis() {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		redisErr = fmt.Errorf("redis-server not found: install it (apt-get install -y redis-server) to run the Redis rows")
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		redisErr = err
		return
	}
	redisAddr = ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(redisAddr)
	if redisDir, err = os.MkdirTemp("", "bench-redis-"); err != nil {
		redisErr = err
		return
	}
	redisCmd = exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--dir", redisDir, "--save", "", "--appendonly", "no")
	if redisErr = redisCmd.Start(); redisErr != nil {
		return
	}
	c := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer c.Close()
	for range 200 {
		if c.Ping(context.Background()).Err() == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	redisErr = fmt.Errorf("redis-server on %s did not answer", redisAddr)
}

func stopRedis() {
	if redisCmd != nil && redisCmd.Process != nil {
		_ = redisCmd.Process.Kill()
		_ = redisCmd.Wait()
	}
	if redisDir != "" {
		os.RemoveAll(redisDir)
	}
}

// redisDeciders returns, for each library, one admitted decision of a rate
// limit kept in the same local redis-server, each through a client of its
// own: a rate high enough that no decision is refused, one key. Both
// clients have the same options: go-redis's defaults and the server's
// address, with ContextTimeoutEnabled set when ctxTimeout is true (what
// resilienceredis's README recommends: the client then bounds each call by
// its context's deadline).
func redisDeciders(b *testing.B, ctxTimeout bool) []struct {
	name   string
	decide func(ctx context.Context) error
} {
	redisOnce.Do(startRedis)
	if redisErr != nil {
		b.Fatal(redisErr)
	}
	const rate = 1_000_000
	ours := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: ctxTimeout})
	peer := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: ctxTimeout})
	b.Cleanup(func() { ours.Close(); peer.Close() })
	l := resilienceredis.NewLimiter(ours, rate, rate)
	rl := redis_rate.NewLimiter(peer)
	limit := redis_rate.Limit{Rate: rate, Burst: rate, Period: time.Second}
	key := "bench-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	return []struct {
		name   string
		decide func(ctx context.Context) error
	}{
		{"resilience", func(ctx context.Context) error { return l.Allow(ctx, key) }},
		{"redis_rate", func(ctx context.Context) error {
			res, err := rl.Allow(ctx, key+"-peer", limit)
			if err == nil && res.Allowed == 0 {
				return fmt.Errorf("redis_rate refused")
			}
			return err
		}},
	}
}

// benchRedisSerial measures one decision after another.
func benchRedisSerial(b *testing.B, ctxTimeout bool) {
	for _, d := range redisDeciders(b, ctxTimeout) {
		b.Run(d.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := d.decide(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchRedisParallel measures decisions made from many goroutines.
func benchRedisParallel(b *testing.B, ctxTimeout bool) {
	for _, d := range redisDeciders(b, ctxTimeout) {
		b.Run(d.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := d.decide(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkRedisRateLimit: one admitted decision of a rate limit shared
// through a local Redis, a round trip each, both clients with
// ContextTimeoutEnabled (resilienceredis runs the script on the caller's
// goroutine).
func BenchmarkRedisRateLimit(b *testing.B) { benchRedisSerial(b, true) }

// BenchmarkRedisRateLimitParallel: the same from many goroutines.
func BenchmarkRedisRateLimitParallel(b *testing.B) { benchRedisParallel(b, true) }

// BenchmarkRedisRateLimitDefaultOptions: the same with go-redis's default
// options for both clients (resilienceredis hands the script to a worker
// goroutine, so that the caller still leaves at the deadline).
func BenchmarkRedisRateLimitDefaultOptions(b *testing.B) { benchRedisSerial(b, false) }

// BenchmarkRedisRateLimitDefaultOptionsParallel: the same from many
// goroutines.
func BenchmarkRedisRateLimitDefaultOptionsParallel(b *testing.B) { benchRedisParallel(b, false) }
