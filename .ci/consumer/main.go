// Command consumer is a program outside the repository, as a user writes
// it: it requires the core and every integration module at the version
// about to be released, builds them from a module proxy, and constructs
// something from each without touching the network. .ci/run copies it
// into an empty module; it is not built in place.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencegrpc"
	"github.com/faf87a20/resilience/resilienceotel"
	"github.com/faf87a20/resilience/resilienceredis"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	obs, err := resilienceotel.NewObserver() // the global meter provider: a no-op
	if err != nil {
		fail(err)
	}
	observed := resilience.WithObserver(obs)
	policy := resilience.Compose(
		resilience.Retry[string](observed, resilience.WithName("consumer")),
		resilience.Guarded[string](resilience.NewBreaker(observed, resilience.WithName("consumer"))),
	)
	got, err := resilience.Do(context.Background(), policy, func(context.Context) (string, error) { return "ok", nil })
	if err != nil || got != "ok" {
		fail(fmt.Errorf("Do = %q, %v", got, err))
	}

	// grpc.NewClient connects on the first call only: none is made; the
	// server is not started.
	conn, err := grpc.NewClient("passthrough:///localhost:1",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDisableRetry(),
		grpc.WithUnaryInterceptor(resiliencegrpc.UnaryClientInterceptor(resiliencegrpc.WithAttempts(2))),
		grpc.WithStreamInterceptor(resiliencegrpc.StreamClientInterceptor()),
		grpc.WithDefaultCallOptions(resiliencegrpc.CallAttempts(1)),
	)
	if err != nil {
		fail(err)
	}
	defer conn.Close()
	perHost := resilience.NewKeyedRateLimiter[string](10, 10)
	srv := grpc.NewServer(grpc.UnaryInterceptor(resiliencegrpc.UnaryServerInterceptor(
		resiliencegrpc.WithServerGuards(perHost.Guard(resiliencegrpc.KeyFromPeer)))))
	defer srv.Stop()

	// go-redis connects on the first command only: none is sent.
	client := redis.NewClient(&redis.Options{Addr: "localhost:1", ContextTimeoutEnabled: true})
	defer client.Close()
	limiter := resilienceredis.NewLimiter(client, 100, 10, resilienceredis.WithTimeout(20*time.Millisecond))

	// Every module of ours comes from the proxy at its version, none
	// replaced by a directory.
	info, ok := debug.ReadBuildInfo()
	if !ok {
		fail(fmt.Errorf("no build information"))
	}
	var ours []string
	for _, d := range info.Deps {
		if !strings.HasPrefix(d.Path, "github.com/faf87a20/resilience") {
			continue
		}
		if d.Replace != nil {
			fail(fmt.Errorf("%s is replaced by %s", d.Path, d.Replace.Path))
		}
		ours = append(ours, d.Path+"@"+d.Version)
	}
	if len(ours) != 4 {
		fail(fmt.Errorf("built with %d modules of the library, want 4: %v", len(ours), ours))
	}
	fmt.Printf("consumer: built with %s (resilienceotel.Version %s); limiter %v/s\n",
		strings.Join(ours, " "), resilienceotel.Version, limiter.Rate())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "consumer:", err)
	os.Exit(1)
}
