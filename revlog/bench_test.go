package revlog

import (
	"testing"
	"time"
)

func benchLog(n int) *Log[int] {
	l := &Log[int]{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		l.Append(entry(int64(1+3*i), t0.Add(time.Duration(i)*time.Millisecond), Put, i, nil))
	}
	return l
}

func BenchmarkAtLatest(b *testing.B) {
	l := benchLog(1000)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, st := l.At(1 << 40); st != Found {
			b.Fatal(st)
		}
	}
}

func BenchmarkAtPast(b *testing.B) {
	l := benchLog(1000)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, st := l.At(int64(1 + (i*7919)%2997)); st != Found {
			b.Fatal(st)
		}
	}
}

func BenchmarkAsOf(b *testing.B) {
	l := benchLog(1000)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, st := l.AsOf(t0.Add(time.Duration((i*7919)%1000)*time.Millisecond), 1<<40); st != Found {
			b.Fatal(st)
		}
	}
}

// BenchmarkAppendTrim appends and trims back to 8 entries every 16, as a
// write with WithMaxHistory(8) does.
func BenchmarkAppendTrim(b *testing.B) {
	l := &Log[int]{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sec, nsec := t0.Unix(), int32(t0.Nanosecond())
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		l.Append(Entry[int]{Rev: int64(i + 1), sec: sec, nsec: nsec, Op: Put, Value: i})
		if l.Len() > 16 {
			l.TrimTo(8, 1<<62)
		}
	}
}
