package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/faf87a20/resilience"
)

func init() {
	register(scenario{order: 60, name: "compose", title: "Composition: the README's ten lines, against a service that fails now and then", run: composeTour})
}

// User is what the simulated users API returns.
type User struct {
	ID   int
	Name string
}

// usersAPI is a simulated users API that fails every third call.
type usersAPI struct{ svc *service }

func (a usersAPI) User(ctx context.Context, id int) (User, error) {
	if _, err := a.svc.Call(ctx); err != nil {
		return User{}, err
	}
	return User{ID: id, Name: fmt.Sprintf("user-%d", id)}, nil
}

func composeTour(ctx context.Context, w io.Writer) error {
	api := usersAPI{newService(ok(5*time.Millisecond), ok(5*time.Millisecond), fail(5*time.Millisecond))}

	// The README's ten lines.
	br := resilience.NewBreaker() // shared by every call to the service
	users := resilience.Compose(
		resilience.Timeout[User](2*time.Second),
		resilience.Retry[User](resilience.WithAttempts(3)),
		resilience.Guarded[User](br),
	)

	for id := 1; id <= 4; id++ {
		before := api.svc.calls.Load()
		u, err := resilience.Do(ctx, users, func(ctx context.Context) (User, error) {
			return api.User(ctx, id)
		})
		attempts := api.svc.calls.Load() - before
		if err != nil {
			fmt.Fprintf(w, "user %d: %v\n", id, err)
			continue
		}
		fmt.Fprintf(w, "user %d: %s, in %d attempt(s); the breaker is %s\n", id, u.Name, attempts, br.State())
	}
	return nil
}
