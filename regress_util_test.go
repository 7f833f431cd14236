package revkv

import (
	"runtime/debug"
	"time"
)

var debugStackFn = debug.Stack

type timeT = time.Time

func timeParse(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

func debugStack() string { return string(debugStackFn()) }
