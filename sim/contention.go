package main

import (
	"math/rand/v2"
	"time"

	"github.com/faf87a20/resilience"
)

// contentionConfig sets the contention scenario: N clients start together
// and each must land one optimistic-concurrency write on one shared row.
type contentionConfig struct {
	Clients  int           // N
	NetMean  time.Duration // mean one-way network delay
	NetSD    time.Duration // its standard deviation
	MaxCalls int           // safety stop: a run gives up after this many writes
}

// contentionResult is what one run of the contention scenario measured.
type contentionResult struct {
	Calls    int           // writes the server handled (the work done)
	Reads    int           // reads the server handled
	Time     time.Duration // when the last client learnt its write landed
	GaveUp   int           // clients whose backoff said stop before they succeeded
	Finished bool          // false when MaxCalls stopped the run
}

// Event kinds of the contention scenario. The event's id is the client.
const (
	evReadAtServer uint8 = iota
	evReadReply
	evWriteAtServer
	evWriteReply
)

type occClient struct {
	backoff resilience.Backoff
	version int           // the row's version as of the client's last read
	retry   int           // retries made so far
	prev    time.Duration // the wait before the previous retry
	landed  bool          // the server accepted the last write
}

// runContention runs the scenario once. The server holds one row with a
// version number; a client reads the version, then writes conditioned on it,
// and the write fails when another write landed in between. A failed client
// waits as its backoff says, then reads and writes again. Each message
// crosses the network with its own delay. Only writes count as calls, as in
// the AWS architecture blog's model.
func runContention(cfg contentionConfig, strategy contentionStrategy, r *rand.Rand) contentionResult {
	var (
		e       engine
		version int
		res     contentionResult
		done    int
	)
	clients := make([]occClient, cfg.Clients)
	for i := range clients {
		clients[i].backoff = strategy.New(r)
		e.at(netDelay(r, cfg.NetMean, cfg.NetSD), evReadAtServer, int32(i))
	}
	delay := func() time.Duration { return netDelay(r, cfg.NetMean, cfg.NetSD) }
	e.run(-1, func(kind uint8, id int32) {
		c := &clients[id]
		switch kind {
		case evReadAtServer:
			res.Reads++
			c.version = version
			e.after(delay(), evReadReply, id)
		case evReadReply:
			e.after(delay(), evWriteAtServer, id)
		case evWriteAtServer:
			res.Calls++
			c.landed = c.version == version
			if c.landed {
				version++
			}
			e.after(delay(), evWriteReply, id)
		case evWriteReply:
			if c.landed {
				done++
				res.Time = e.now
				return
			}
			if cfg.MaxCalls > 0 && res.Calls >= cfg.MaxCalls {
				return
			}
			c.retry++
			d, ok := c.backoff.Delay(c.retry, c.prev)
			if !ok {
				res.GaveUp++
				return
			}
			c.prev = d
			e.after(d+delay(), evReadAtServer, id)
		}
	})
	res.Finished = done+res.GaveUp == cfg.Clients
	return res
}
