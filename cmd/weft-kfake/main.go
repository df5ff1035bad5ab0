// Command weft-kfake runs an in-memory Kafka-API cluster (franz-go's kfake)
// for weft's scale-out tests and local experiments: a few brokers on
// loopback, the ingest topic created, state persisted in a directory so that
// a restart on the same ports keeps every acknowledged record. It is a test
// engine (no replication, no throttling), not a production broker; see
// docs/scale-out.md.
//
// It prints the brokers' addresses, one per line, once they listen, and
// stops on SIGINT or SIGTERM (persisting its state).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("weft-kfake", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		dir        = fs.String("data-dir", "", "directory of the cluster's state; empty keeps it in memory only")
		ports      = fs.String("ports", "", "broker ports on 127.0.0.1, comma-separated (one broker each); empty: -brokers random ports")
		brokers    = fs.Int("brokers", 3, "number of brokers when -ports is empty")
		topic      = fs.String("topic", "weft-ingest", "topic to create")
		partitions = fs.Int("partitions", 2, "partitions of the topic")
		syncWrites = fs.Bool("sync", true, "fsync every write, so that a kill -9 of this process loses nothing acknowledged")
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	opts := []kfake.Opt{kfake.SeedTopics(int32(*partitions), *topic)}
	if *ports != "" {
		var ps []int
		for _, p := range strings.Split(*ports, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil {
				fmt.Fprintf(stderr, "weft-kfake: bad port %q\n", p)
				return 2
			}
			ps = append(ps, n)
		}
		opts = append(opts, kfake.Ports(ps...))
	} else {
		opts = append(opts, kfake.NumBrokers(*brokers))
	}
	if *dir != "" {
		opts = append(opts, kfake.DataDir(*dir))
		if *syncWrites {
			opts = append(opts, kfake.SyncWrites())
		}
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(stderr, "weft-kfake:", err)
		return 1
	}
	for _, a := range c.ListenAddrs() {
		fmt.Fprintln(stdout, a)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	<-sigs
	c.Close()
	return 0
}
