//go:build tools

// The modules the peers' tests import beside the adapters, kept in go.mod
// for the runner's copies.
package peertests

import (
	_ "github.com/hashicorp/go-hclog"
	_ "github.com/stretchr/testify/require"
	_ "k8s.io/utils/clock/testing"
)
