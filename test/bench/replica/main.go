// Command replica stands in for one shard replica of a controller in the shard-scaling benchmark: a pod informer
// through its shard's proxy, in a process of its own, so that the shard's memory is its own process's. Once the
// informer has synced it writes its podsync.Result as one JSON line to stdout and holds its store until stdin
// closes, while the benchmark reads its RSS.
//
//	FEDMESH_BENCH_TOKEN=... replica --server http://127.0.0.1:PORT
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/client-go/rest"

	"github.com/fedmesh/fedmesh/test/bench/podsync"
)

func main() {
	server := flag.String("server", "", "URL of the shard's proxy (plain HTTP, loopback)")
	flag.Parse()
	if *server == "" {
		fail(fmt.Errorf("--server is required"))
	}
	// The token comes from the environment, not the command line, which every process on the machine can read.
	cfg := &rest.Config{Host: *server, BearerToken: os.Getenv("FEDMESH_BENCH_TOKEN"), QPS: -1}
	_, err := podsync.Sync(context.Background(), cfg, func(r podsync.Result) error {
		if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
			return err
		}
		_, err := io.Copy(io.Discard, os.Stdin)
		return err
	})
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "replica:", err)
	os.Exit(1)
}
