package main

import (
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInMemoryRunEndsWithTheDigest: run without -dir, the example keeps
// its trail on a directory in memory and ends with the chain's digest, not
// with an error.
func TestInMemoryRunEndsWithTheDigest(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout, args, flags := os.Stdout, os.Args, flag.CommandLine
	os.Stdout, os.Args = w, []string{"audit"}
	// main defines its flags on the command line's set: a fresh set lets
	// the test run again (-count=2) without "flag redefined".
	flag.CommandLine = flag.NewFlagSet("audit", flag.ExitOnError)
	defer func() { os.Stdout, os.Args, flag.CommandLine = stdout, args, flags }()
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	main()
	w.Close()
	out := <-done
	require.NotContains(t, out, "revkv:", "no error in the output")
	require.NotContains(t, out, "unsupported")
	require.Regexp(t, `Q6\. .*\n    revision 10: [0-9a-f]{64}\n`, out)
	require.True(t, strings.HasSuffix(out, "revkv verify --rev N --digest HEX)\n"), out[len(out)-200:])
}
