// Package etcdstore is revkv's multi-version key-value store on an etcd
// cluster: the same model as the root package (every key keeps its
// revision history, may carry a TTL whose expiry is written into history at
// exactly its expiry time, and can be read as it was at any retained
// revision or time), for when one process is not enough. Any number of
// Store values, in any number of processes, may open the same cluster and
// prefix; they share one linearizable history.
//
//	cli, _ := clientv3.New(clientv3.Config{Endpoints: []string{"localhost:2379"}})
//	s, err := etcdstore.Open(ctx, cli, "orders", revkv.JSONCodec[Order]())
//	rev, err := s.Put(ctx, "o-17", order)
//	old, ok, err := s.GetAsOf(ctx, "o-17", yesterday)
//
// # The same store, with these differences
//
// Every call of the root package is here, ctx first, with revkv's sentinel
// errors (revkv.ErrNotFound, ErrCompacted, ...) inside a *revkv.OpError that
// names the call and the key, and etcd's errors wrapped (errors.Is sees
// context.Canceled and context.DeadlineExceeded through them). Reads return
// an error too: they are requests to the cluster.
//
//   - Revisions are revkv's, not etcd's: a counter kept in etcd (the head key,
//     below) that every store on the prefix advances, one per entry, exactly
//     as the root package numbers them (1, 2, 3, ... with no gaps; an
//     Update's writes take consecutive revisions, its expiries earlier
//     ones). They do not depend on what else the cluster stores, and a read
//     at a revision needs no mapping from etcd's numbers, so it is one round
//     trip. SPEC §10 allows etcd's revisions; this package gives the stricter
//     numbering of §2, which the reference-model test checks one to one.
//   - Update's fn may run more than once: a write is optimistic, like etcd's
//     STM, and runs again on the new state when another writer committed
//     first. fn must have no side effects beyond its Txn. Its writes commit
//     in one etcd transaction. A Txn read that fails makes Update return the
//     error. Every Txn method takes ctx, since a read (and so a Delete of a
//     key the Txn has not seen) is a request.
//   - A View is a read at one revision: it has no ctx to open or close, but
//     each read takes one. It pins its revision in etcd (a key on the
//     store's lease) so that Compact, Trim and the history cap of every
//     store keep what it needs; a process that dies without closing its
//     Views releases them when its lease runs out (30 s).
//   - Scan yields (entry, error) pairs and reads the state current when the
//     iteration began, through a pinned View. Opening a View (At, AsOf, and
//     so each Scan) writes its pin key and Close deletes it: two small
//     writes to etcd, which take no revkv revision.
//   - A Watch whose etcd stream breaks (an election, a lost member: its
//     etcd watch requires a leader) replays from revkv's history and follows
//     again; it yields etcd's error and ends when its reads fail, or when the
//     stream broke three times in a row with nothing yielded in between. The
//     caller then starts again from the revision after the last entry it
//     got.
//   - The trimmer (WithTrimInterval) runs Trim on each tick: one pass over
//     every key, not the root package's random sampling.
//   - Close ends the store's goroutines and its writes (revkv.ErrClosed); it
//     does not close the caller's client, and reads still answer.
//   - A nil client or codec, a prefix holding a zero byte, and a negative
//     option are errors from Open, not panics.
//   - The empty key is an ordinary key, as in the root package.
//
// # Design: the etcd key layout
//
// All of a store's keys are under prefix+"\x00" (so the prefixes "a" and
// "ab" never share a key: "a\x00" is not a prefix of "ab\x00"):
//
//	head                         the last revision, its time, revision 1's time
//	floor                        the compaction floor: revision, its time; the trim floor
//	k/<key>                      the key's latest entry, tombstones included
//	h/<key>\x00\x01<inv rev>     one history entry: op, time, expiry, value
//	x/<expires hex><key>         the expiry index, ordered by (time, key)
//	r/<last rev hex>             a commit's row: each entry's revision, time and key
//	t/<inv time><inv rev>        the time index: the last revision of each time, newest first
//	p/<store>.<n>                an open View's pinned revision, on a lease
//
// <inv rev> is the 16 hex digits of MaxInt64-rev, so a key's history is
// stored newest first; a zero byte in a key is written "\x00\xff" in h/, so
// that the separator "\x00\x01" cannot occur inside a key and byte order is
// kept.
//
// # Design: how a revision and its time are assigned
//
// A write reads, in one request, the head, the first entries of the expiry
// index and the latest entries of the keys it must see (Delete, Expire,
// Persist, CompareAndPut read their key; Put does not). Its time is the later
// of the store's clock and the head's time, so times never decrease along
// revisions whatever the stores' clocks say. It materialises the expiries
// due at that time (each an OpExpire entry at exactly its ExpiresAt, taking
// the next revision), then its own entries take the revisions after them.
// It commits everything (history entries, latest entries, the commit's
// revision and time rows, the expiry index, the new head) in one etcd
// transaction guarded by "the head's ModRevision is what I read". Every
// write of every store rewrites the head, so if the guard holds nothing
// revkv wrote changed in between: the write is serializable against all
// stores, its revisions follow the head's with no gap, and no two stores
// ever write one expiry twice. If the guard fails, the same request's else
// branch returns the new snapshot and the write runs again. A retried write
// can never land twice: a write that did commit has moved the head, so its
// retry's guard fails. A write whose outcome is unknown (the connection
// broke during the commit) is returned as an error, never retried blindly.
//
// Two things make the common case cheap. A store keeps the snapshot its own
// last commit left, so a Put that follows it sends its commit at once: one
// round trip (a stale cache only fails the guard). And a store's concurrent
// write calls are carried by one commit (group commit), each its own
// revision, so they share round trips instead of racing for the head.
//
// A Put does not read the value it replaces, so the expiry index entry of
// an older value with a TTL is left behind, stale. Whoever finds an index
// entry due reads the key's latest entry: if it is still the value with
// that expiry time, the expiry is written; otherwise the stale entry is
// only deleted. Stale entries cost the expiry pass a little work each, once.
// (Delete, Expire and Persist read the key anyway, and delete its old index
// entry at once.)
//
// Reads are etcd's linearizable reads, so with the head guard the stores
// form one linearizable store: the porcupine test checks this over two
// stores, and over a 3-member cluster losing its leader.
//
// # Design: reads at a revision in a bounded number of round trips
//
// etcd finds the first keys of a range with a limit in O(log n), but sorts
// a reversed range in full, and filters by revision only after reading the
// whole range; so history is stored newest first, and the entry of key
// visible at revision rev is the first key at or after
// h/<key>\x00\x01<inv rev>: one range read with limit 1. GetAt is that read
// and the floor's, in one transaction (with the head's too, for a revision
// above any the store has seen): one round trip. History is one range read
// of h/<key> (one round trip for any number of entries, within etcd's
// response size). GetAsOf is two: the time index t/ maps a time to the last
// revision at or before it (again the first key at or after t/<inv time>),
// then GetAt's read. Get is one read of k/<key>. A View's Get is one; its
// Scan reads key names a page at a time and each page's entries in one
// transaction. etcd's server counts a range's keys in its in-memory index
// even with a limit, so a read of a key with R entries walks up to R index
// items on the server (no disk reads): this counting, not a round trip, is
// the part that grows with R.
//
// None of this reads etcd's old revisions, so etcd's compaction (its
// auto-compaction, etcdctl compact) never makes a read fail: only revkv's
// Compact, WithMaxHistory and WithRetention delete history keys. A Watch
// replays revkv's history from the r/ rows and then follows etcd's watch
// of the history keys; if etcd has compacted past where it must resume, it
// replays from revkv's history again.
//
// # Design: the hot key
//
// The head is written by every write of every store on the prefix: writes
// to one prefix are serialized through it, like a single-leader database.
// Under contention a write that loses the race costs one more round trip
// (its retry starts from the else branch's snapshot); some write always
// wins, so the prefix makes progress at the rate etcd commits transactions
// to one key (etcd applies all writes through one raft log and one
// goroutine anyway, so a cluster never commits in parallel; the head adds
// retries, not a new bottleneck). This is acceptable because it is exactly
// what revkv's contract asks for: one total order of revisions with
// non-decreasing times and exact expiry across all stores. Applications that
// need independent write throughput use several prefixes: each is its own
// history with its own head.
//
// # etcd's limits a user meets
//
//   - Request size, --max-request-bytes (1.5 MiB by default): a write sends
//     its value twice (history and latest entry), so the largest value is a
//     little under half of it; a larger one is ErrValueTooLarge, nothing
//     written (WithMaxRequestBytes tells the store the cluster's limit). An
//     Update sends all its values in one request.
//   - Operations per transaction, --max-txn-ops (128): each write takes two
//     (three with a TTL) and a commit three more, so an Update of more than
//     about 40 writes is ErrTooManyWrites (WithMaxTxnOps). A commit carries
//     at most about a tenth of the limit in expiries, and group commit about
//     an eighth in write calls.
//   - The database quota, --quota-backend-bytes (2 GiB by default, 8 GiB
//     suggested maximum): revkv's history lives in etcd's database and is
//     kept until revkv's Compact, WithRetention or WithMaxHistory drop it;
//     etcd's compaction and defragmentation reclaim the space of what they
//     dropped. With no bound the quota fills and every write fails with
//     etcd's "database space exceeded" alarm. Each entry costs its value
//     twice while it is a key's latest, once after, and about 100 bytes of
//     index rows.
//   - The response size: History of a key is one response, so a key with a
//     very long history (hundreds of MiB of values) makes a slow read; cap
//     it with WithMaxHistory.
package etcdstore
