package etcdstore_test

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// soak makes the fault tests run longer: go test -soak.
var soak = flag.Bool("soak", false, "run the fault and random tests much longer")

// cluster is etcd started in this process by a test: n members on free
// ports of 127.0.0.1, in a temporary directory, stopped at the test's end.
type cluster struct {
	t       testing.TB
	mu      sync.Mutex // guards members
	members []*embed.Etcd
	cfgs    []*embed.Config
	urls    []string // the client URL of each member
}

// freePorts returns n ports nothing listens on (there is a small window in
// which another process could take one; etcd then fails to start loudly).
func freePorts(t testing.TB, n int) []int {
	ports := make([]int, n)
	ls := make([]net.Listener, n)
	for i := range ls {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ls[i], ports[i] = l, l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range ls {
		require.NoError(t, l.Close())
	}
	return ports
}

func localURL(port int) url.URL {
	return url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", port)}
}

// startCluster starts an n-member cluster; tune, if not nil, changes each
// member's configuration before it starts.
func startCluster(t testing.TB, n int, tune func(*embed.Config)) *cluster {
	t.Helper()
	ports := freePorts(t, 2*n)
	c := &cluster{t: t, members: make([]*embed.Etcd, n)}
	var initial []string
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = t.TempDir()
		cu, pu := localURL(ports[2*i]), localURL(ports[2*i+1])
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
		cfg.LogLevel = "error"
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		cfg.UnsafeNoFsync = true // a crash of the process, not of the machine, is what tests make
		cfg.InitialClusterToken = "revkv-test"
		initial = append(initial, fmt.Sprintf("%s=%s", cfg.Name, pu.String()))
		c.cfgs = append(c.cfgs, cfg)
		c.urls = append(c.urls, cu.String())
	}
	for _, cfg := range c.cfgs {
		cfg.InitialCluster = strings.Join(initial, ",")
		if tune != nil {
			tune(cfg)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, cfg := range c.cfgs {
		wg.Go(func() {
			e, err := embed.StartEtcd(cfg)
			if err != nil {
				errs[i] = err
				return
			}
			c.members[i] = e
			select {
			case <-e.Server.ReadyNotify():
			case <-time.After(60 * time.Second):
				errs[i] = fmt.Errorf("member %d not ready after 60 s", i)
			}
		})
	}
	wg.Wait()
	t.Cleanup(c.stop)
	for _, err := range errs {
		require.NoError(t, err)
	}
	return c
}

func (c *cluster) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.members {
		if e != nil {
			e.Close()
			c.members[i] = nil
		}
	}
}

// client returns a client of every member, closed at the test's end.
func (c *cluster) client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   c.urls,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// leader returns the index of the member that leads now.
func (c *cluster) leader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.members {
		if e != nil && e.Server.Leader() == e.Server.MemberID() {
			return i
		}
	}
	return -1
}

// crash stops member i at once, as a crash would (no leadership transfer).
func (c *cluster) crash(i int) {
	c.mu.Lock()
	e := c.members[i]
	c.members[i] = nil
	c.mu.Unlock()
	e.Server.HardStop()
	e.Close()
}

// single starts one member and returns a client of it: most tests need no more.
func single(t testing.TB) (*cluster, *clientv3.Client) {
	c := startCluster(t, 1, nil)
	return c, c.client(t)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
