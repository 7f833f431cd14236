package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// version is the tool's version, as --version prints it; revkv-server's
// is the same.
const version = "0.1.0"

// Exit statuses.
const (
	exitOK    = 0 // success, --help
	exitFail  = 1 // verify failed, what was asked for is not there, any other failure
	exitUsage = 2 // the command line is wrong
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// cli is one run of the tool: where it reads and writes, the directory,
// and the flags of the command being run.
type cli struct {
	dir    string
	json   bool
	stdin  io.Reader
	out    *bufio.Writer // stdout, flushed once the command ends
	stdout io.Writer
	stderr io.Writer
	// stderrTerm and stdoutTerm say whether stderr and stdout are
	// terminals: progress is shown on stderr only then (and for export,
	// only if stdout is not). now is the progress's clock.
	stderrTerm, stdoutTerm bool
	now                    func() time.Time

	// The command's flags, as given: parsed by the command (a bad value is
	// a usage error naming the flag).
	rev, at, from, to, digest string
	addr, token               string          // serve's
	set                       map[string]bool // the flags given on the command line
	// ctx, if not nil, ends serve when it is done (else SIGINT or SIGTERM do).
	ctx context.Context
}

// usageError is a command line the tool cannot run: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// run runs the tool with args (without the program name) and returns the
// exit status. main calls it with the process's streams; tests call it in
// process.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return newCLI(stdin, stdout, stderr).run(args)
}

func newCLI(stdin io.Reader, stdout, stderr io.Writer) *cli {
	return &cli{stdin: stdin, stdout: stdout, stderr: stderr, out: bufio.NewWriterSize(stdout, 64<<10),
		stderrTerm: isTerminal(stderr), stdoutTerm: isTerminal(stdout), now: time.Now}
}

// run runs the command line args and returns the exit status.
func (c *cli) run(args []string) int {
	err := c.dispatch(args)
	if ferr := c.out.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("writing the output: %w", ferr)
	}
	var help helpShown
	switch {
	case err == nil, errors.As(err, &help):
		return exitOK
	case errors.As(err, new(*usageError)):
		c.fail(err)
		return exitUsage
	default:
		c.fail(err)
		return exitFail
	}
}

// helpShown ends a run that printed help, with status 0.
type helpShown struct{}

func (helpShown) Error() string { return "help shown" }

// fail prints err as the one line of an error: "revkv: " and a sentence.
// The store's errors say "revkv:" for when they stand alone: wrapped in
// the tool's, the prefix is said once, at the start.
func (c *cli) fail(err error) {
	fmt.Fprintf(c.stderr, "revkv: %s\n", oneSentence(err))
}

// oneSentence is err's text as one line without any "revkv: " prefix.
func oneSentence(err error) string {
	msg := strings.TrimPrefix(strings.TrimSpace(err.Error()), "revkv: ")
	msg = strings.ReplaceAll(msg, ": revkv: ", ": ")
	return strings.ReplaceAll(msg, "\n", "; ")
}

// dispatch parses the global flags, finds the command and runs it.
func (c *cli) dispatch(args []string) error {
	global := flag.NewFlagSet("revkv", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	global.StringVar(&c.dir, "dir", "", "")
	global.BoolVar(&c.json, "json", false, "")
	showVersion := global.Bool("version", false, "")
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.toolUsage(c.out)
			return helpShown{}
		}
		return usagef("%v (see 'revkv --help')", err)
	}
	if *showVersion {
		_, err := fmt.Fprintln(c.out, "revkv", version)
		return err
	}
	c.set = map[string]bool{}
	global.Visit(func(f *flag.Flag) { c.set[f.Name] = true })
	rest := global.Args()
	if len(rest) == 0 {
		return usagef("no command given (see 'revkv --help' for the commands)")
	}
	name, rest := rest[0], rest[1:]
	if name == "help" {
		return c.help(rest)
	}
	cmd := lookup(name)
	if cmd == nil {
		return usagef("%q is not a command (see 'revkv --help' for the commands)", name)
	}
	pos, err := c.parse(cmd, rest)
	if err != nil {
		return err
	}
	if c.json && !cmd.json {
		return usagef("%s: --json does not apply to it (see 'revkv %s --help')", name, name)
	}
	if n := len(pos); n < cmd.min || n > cmd.max {
		return c.argCountError(cmd, pos)
	}
	if err := c.chooseDir(); err != nil {
		return err
	}
	return cmd.run(c, pos)
}

// parse parses the command's flags wherever they stand among its
// arguments and returns the positional arguments.
func (c *cli) parse(cmd *command, args []string) ([]string, error) {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.dir, "dir", c.dir, "")
	fs.BoolVar(&c.json, "json", c.json, "") // refused after parsing where it does not apply
	for _, f := range cmd.flags {
		fs.StringVar(c.flagVar(f), f, "", "")
	}
	flags, pos := splitArgs(fs, args)
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.commandUsage(c.out, cmd)
			return nil, helpShown{}
		}
		return nil, usagef("%s: %v (see 'revkv %s --help')", cmd.name, err, cmd.name)
	}
	pos = append(pos, fs.Args()...)
	fs.Visit(func(f *flag.Flag) { c.set[f.Name] = true })
	return pos, nil
}

// flagVar is where the value of the command flag name goes.
func (c *cli) flagVar(name string) *string {
	switch name {
	case "rev":
		return &c.rev
	case "at":
		return &c.at
	case "from":
		return &c.from
	case "to":
		return &c.to
	case "digest":
		return &c.digest
	case "addr":
		return &c.addr
	case "token":
		return &c.token
	}
	panic("revkv: no flag " + name)
}

// splitArgs separates the flags in args from the positional arguments, so
// that flags may come after the arguments as well as before them (the flag
// package stops at the first positional argument): "get KEY --rev 3" parses
// as "get --rev 3 KEY". A flag that takes a value takes the next argument
// unless it is written --flag=value. After "--", every argument is
// positional: "get -- -key" reads the key "-key". A lone "-" is positional.
func splitArgs(fs *flag.FlagSet, args []string) (flags, pos []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, append(pos, args[i+1:]...)
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue // fs.Parse says it is not defined
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return flags, pos
}

// argCountError says which argument is missing or extra.
func (c *cli) argCountError(cmd *command, pos []string) error {
	see := fmt.Sprintf("(usage: %s)", cmd.synopsis())
	if len(pos) < cmd.min {
		return usagef("%s: %s is missing %s", cmd.name, cmd.need[len(pos)], see)
	}
	return usagef("%s: unexpected argument %q %s", cmd.name, pos[cmd.max], see)
}

// chooseDir settles the directory: --dir, else $REVKV_DIR, else the
// current directory.
func (c *cli) chooseDir() error {
	if c.set["dir"] {
		if c.dir == "" {
			return usagef("--dir is empty")
		}
	} else if env := os.Getenv("REVKV_DIR"); env != "" {
		c.dir = env
	} else {
		c.dir = "."
	}
	c.dir = filepath.Clean(c.dir)
	return nil
}

// help is the help command: the tool's usage, or a command's.
func (c *cli) help(args []string) error {
	switch len(args) {
	case 0:
		c.toolUsage(c.out)
	case 1:
		cmd := lookup(args[0])
		if cmd == nil {
			return usagef("help: %q is not a command (see 'revkv --help' for the commands)", args[0])
		}
		c.commandUsage(c.out, cmd)
	default:
		return usagef("help: unexpected argument %q (usage: revkv help [COMMAND])", args[1])
	}
	return helpShown{}
}

// toolUsage lists every command with its summary.
func (c *cli) toolUsage(w io.Writer) {
	fmt.Fprint(w, `revkv is the offline tool for a revkv data directory.

Usage: revkv [--dir DIR] COMMAND [flags] [args]

Commands:
`)
	for _, cmd := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprint(w, `
Global flags (before or after the command):
  --dir DIR   the data directory (default: $REVKV_DIR, else the current directory)
  --json      machine output: one JSON object, or JSON lines (read commands)
  --version   print the tool's version and exit

Values are shown as they are stored: a JSON object or array (what
JSONCodec writes for a struct, map or slice) as JSON, found by looking at
the value (--json gives it as value_json); other UTF-8 text quoted (as
value with --json); anything else as base64 (value_base64).

Only import, repair, checkpoint and compact change the directory. Exit status: 0 on
success, 1 when verify fails, what was asked for is not there, or anything
else fails, 2 for a command line that does not parse.

Run 'revkv COMMAND --help' for a command's flags and an example.
`)
}

// commandUsage prints one command's usage, flags and example.
func (c *cli) commandUsage(w io.Writer, cmd *command) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", cmd.synopsis(), cmd.doc)
	if cmd.json {
		fmt.Fprintf(w, "\n  --json  %s\n", cmd.jsonDoc)
	}
	fmt.Fprintf(w, "\nExample:\n  %s\n", cmd.example)
}
