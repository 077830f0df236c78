package resiliencegrpc_test

import (
	"testing"

	"github.com/faf87a20/resilience/internal/docexample"
)

// TestDocsStartWithExample: README.md and the package doc start with the
// code of Example_client, which go test compiles.
func TestDocsStartWithExample(t *testing.T) {
	docexample.Check(t, "example_test.go", "Example_client")
}
