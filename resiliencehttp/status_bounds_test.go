package resiliencehttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/faf87a20/resilience"
	"github.com/faf87a20/resilience/resiliencehttp"
)

// TestStatusHandlerBoundsGuards: of more guards than the page shows, 200,
// the most critical are shown, then the others by name, and a line says
// how many more there are of each health; the summary counts them all.
// The JSON holds the same 200, and says how many it left out in a header.
func TestStatusHandlerBoundsGuards(t *testing.T) {
	reg := resilience.NewRegistry()
	for i := range 205 {
		require.NoError(t, reg.Register(fmt.Sprintf("pool-%03d", i), resilience.NewBulkhead(1)))
	}
	for i := range 3 { // last by name, first by health
		br := resilience.NewBreaker(resilience.WithClock(clock.NewMock()))
		br.Trip()
		require.NoError(t, reg.Register(fmt.Sprint("z-open-", i), br))
	}
	full := resilience.NewBulkhead(1)
	require.True(t, full.TryAcquire())
	require.NoError(t, reg.Register("zz-full", full))
	base := statusServer(t, reg)

	_, body := fetchPage(t, "GET", base, nil)
	assert.Equal(t, 200, strings.Count(body, "<tr class="), "rows")
	assert.Contains(t, body, "209 registered: 205 ok, 1 warning, 3 critical.")
	assert.Contains(t, body, "9 more not shown (0 critical, 0 warning, 9 ok):")
	for _, name := range []string{"z-open-0", "z-open-2", "zz-full", "pool-000", "pool-195"} {
		assert.Contains(t, body, `data-name="`+name+`"`)
	}
	assert.NotContains(t, body, `data-name="pool-196"`)

	resp, body := fetchPage(t, "GET", base+"?format=json", nil)
	assert.Equal(t, "9", resp.Header.Get("Resilience-Guards-Omitted"))
	var got []resilience.Snapshot
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Len(t, got, 200)
	assert.Equal(t, "pool-000", got[0].Name)
	assert.Equal(t, "pool-195", got[195].Name)
	assert.Equal(t, []string{"z-open-0", "z-open-1", "z-open-2", "zz-full"}, []string{got[196].Name, got[197].Name, got[198].Name, got[199].Name})

	resp, _ = fetchPage(t, "GET", statusServer(t, resilience.NewRegistry())+"?format=json", nil)
	assert.Empty(t, resp.Header.Values("Resilience-Guards-Omitted"), "none left out")
}

// TestStatusHandlerBoundsTexts: names are cut to 80 characters, keys to
// 64 and error texts to 300, each ending in an ellipsis, on the page and
// in the JSON; at most the 32 newest events of a guard are shown; a
// breaker whose name was cut has no actions.
func TestStatusHandlerBoundsTexts(t *testing.T) {
	ctx := context.Background()
	longName := strings.Repeat("né", 100) // 200 characters, 300 bytes
	longKey := strings.Repeat("k", 100)
	longErr := strings.Repeat("e", 5000)
	reg := resilience.NewRegistry(resilience.WithRegistryEvents(100))
	require.NoError(t, reg.Register(longName, resilience.NewBreaker()))
	require.NoError(t, reg.Register("short", resilience.NewBreaker()))
	keyed := resilience.NewKeyedRateLimiter[string](1, 1, resilience.WithClock(clock.NewMock()))
	require.NoError(t, reg.Register("keyed", keyed))
	keyed.Allow(longKey)
	keyed.Allow(longKey)
	reg.Observe(ctx, resilience.Event{Kind: resilience.EventRefused, Component: "breaker", Name: "short", Err: errors.New(longErr)})
	for i := range 60 { // unlike events, each a record
		kind := resilience.EventHedge
		if i%2 == 1 {
			kind = resilience.EventFallback
		}
		reg.Observe(ctx, resilience.Event{Kind: kind, Name: longName})
	}
	cutName := string([]rune(longName)[:79]) + "…"
	cutKey := strings.Repeat("k", 63) + "…"
	cutErr := strings.Repeat("e", 299) + "…"
	cutText := "refused: " + strings.Repeat("e", 290) + "…"

	_, body := fetchPage(t, "GET", statusServer(t, reg, resiliencehttp.WithStatusActions())+"?format=json", nil)
	var got []resilience.Snapshot
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Len(t, got, 3)
	assert.Equal(t, "keyed", got[0].Name)
	assert.Equal(t, cutKey, got[0].KeyedRateLimiter.TopRefused[0].Key)
	assert.Equal(t, cutName, got[1].Name)
	assert.Len(t, got[1].Events, 32)
	assert.Equal(t, "short", got[2].Name)
	assert.Equal(t, cutErr, got[2].Events[0].Err)
	assert.Equal(t, cutText, got[2].Events[0].Text)
	assert.Equal(t, 300, utf8.RuneCountInString(got[2].Events[0].Text))

	resp, body := fetchPage(t, "GET", statusServer(t, reg, resiliencehttp.WithStatusActions()), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.NotContains(t, body, "néné"+strings.Repeat("né", 40), "a name past 80 characters")
	assert.Contains(t, body, `data-name="`+cutName+`"`)
	assert.Contains(t, body, cutKey)
	assert.NotContains(t, body, cutKey[:63]+"k")
	assert.Contains(t, body, cutText)
	assert.Equal(t, 32, strings.Count(body, "<li><time>")-2, "events: the short breaker's one, the keyed limiter's refusal, which it reports once registered, and 32 of the long one's")
	assert.Equal(t, 1, strings.Count(body, "<form"), "a form for the breaker whose name is whole")
}

// TestStatusHandlerNamesWrapAtSeparators: a name may wrap after each run
// of separators and nowhere else, and the kind and state never wrap.
func TestStatusHandlerNamesWrapAtSeparators(t *testing.T) {
	tests := []struct{ name, want string }{
		{"payments", "payments"},
		{"payments-api.eu-west-1", "payments-<wbr>api.<wbr>eu-<wbr>west-<wbr>1"},
		{"a--b__c", "a--<wbr>b__<wbr>c"},
		{"/tenants/42:reads@db-", "/<wbr>tenants/<wbr>42:<wbr>reads@<wbr>db-"},
		{"<b>-x", "&lt;b&gt;-<wbr>x"},
	}
	reg := resilience.NewRegistry()
	for _, tc := range tests {
		require.NoError(t, reg.Register(tc.name, resilience.NewBulkhead(1)))
	}
	_, body := fetchPage(t, "GET", statusServer(t, reg), nil)
	for _, tc := range tests {
		assert.Contains(t, body, `<td class="name">`+tc.want+`</td>`)
	}
	assert.NotContains(t, body, "break-all", "names break at separators, not anywhere")
	assert.Contains(t, body, "td.kind, td.health { white-space: nowrap; }")
}
