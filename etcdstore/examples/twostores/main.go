// Command twostores starts an etcd server inside the process, opens two
// revkv stores on it with the same prefix, as two services would, and shows
// that they share one history: what one writes the other reads, expiries
// are written once whoever sees them first, and the past stays readable
// after etcd compacts its own history.
//
//	cd etcdstore && go run ./examples/twostores
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/revkv/revkv"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/revkv/revkv/etcdstore"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	endpoint, stop, err := startEtcd()
	if err != nil {
		return err
	}
	defer stop()

	// Two services, each with its own client and store, on one prefix.
	a, closeA, err := openStore(ctx, endpoint)
	if err != nil {
		return err
	}
	defer closeA()
	b, closeB, err := openStore(ctx, endpoint)
	if err != nil {
		return err
	}
	defer closeB()

	r1, err := a.Put(ctx, "widget", "12 in stock")
	if err != nil {
		return err
	}
	if _, err := b.Put(ctx, "widget", "11 in stock"); err != nil {
		return err
	}
	if _, err := b.PutTTL(ctx, "lock/widget", "held by b", 200*time.Millisecond); err != nil {
		return err
	}
	v, _, err := a.Get(ctx, "widget")
	if err != nil {
		return err
	}
	fmt.Println("a reads what b wrote:", v)
	old, _, err := b.GetAt(ctx, "widget", r1)
	if err != nil {
		return err
	}
	fmt.Printf("b reads revision %d, written by a: %s\n", r1, old)

	time.Sleep(400 * time.Millisecond) // both expirers run; the expiry is written once
	return afterExpiry(ctx, endpoint, a, r1)
}

// afterExpiry prints the lock's history, then compacts etcd and reads the
// past again.
func afterExpiry(ctx context.Context, endpoint string, a *etcdstore.Store[string], r1 revkv.Revision) error {
	h, err := a.History(ctx, "lock/widget")
	if err != nil {
		return err
	}
	for _, e := range h {
		fmt.Printf("  lock/widget rev %d %s at %s\n", e.Rev, e.Op, e.Time.Format(time.StampMilli))
	}

	// etcd compacts its own history; revkv's stays.
	admin, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer admin.Close()
	now, err := admin.Get(ctx, "any")
	if err != nil {
		return err
	}
	if _, err := admin.Compact(ctx, now.Header.Revision); err != nil {
		return fmt.Errorf("compacting etcd: %w", err)
	}
	old, _, err := a.GetAt(ctx, "widget", r1)
	if err != nil {
		return err
	}
	fmt.Printf("after etcd's compaction, revision %d still reads %q\n", r1, old)
	return nil
}

// openStore opens a store on the "inventory" prefix with a client of its
// own, as a separate service would; the returned func closes both.
func openStore(ctx context.Context, endpoint string) (*etcdstore.Store[string], func(), error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, Logger: zap.NewNop()})
	if err != nil {
		return nil, nil, err
	}
	s, err := etcdstore.Open(ctx, cli, "inventory", revkv.StringCodec(), etcdstore.WithExpiryInterval(50*time.Millisecond))
	if err != nil {
		cli.Close()
		return nil, nil, err
	}
	return s, func() { s.Close(); cli.Close() }, nil
}

// startEtcd starts a one-member etcd on a free port in a temporary directory.
func startEtcd() (string, func(), error) {
	dir, err := os.MkdirTemp("", "twostores")
	if err != nil {
		return "", nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cu, pu := freeURL(), freeURL()
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("etcd did not start")
	}
	return cu.String(), func() { e.Close(); os.RemoveAll(dir) }, nil
}

func freeURL() url.URL {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}
