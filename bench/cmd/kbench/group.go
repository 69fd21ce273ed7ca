package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/kshare/kshare/internal/kafkaadmin"
)

// freshGroup sets share.auto.offset.reset=earliest on group, which must not
// have fetched yet, so that its first member starts at the topic's first
// record. Every contestant run gets a group of its own made this way.
func freshGroup(ctx context.Context, bootstrap, group string) error {
	cl, err := newClient(bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := kafkaadmin.SetShareGroupConfig(ctx, cl, group, map[string]string{"share.auto.offset.reset": "earliest"}); err != nil {
		return fmt.Errorf("preparing share group %s: %w", group, err)
	}
	return nil
}

// runGroup is `kbench group --group G`: freshGroup from the command line, for
// trying a contestant by hand.
func runGroup(ctx context.Context, args []string) error {
	var bootstrap, group string
	fs := flag.NewFlagSet("group", flag.ContinueOnError)
	fs.StringVar(&bootstrap, "bootstrap", bootstrapDefault(), "Kafka `host:port`")
	fs.StringVar(&group, "group", "", "share group to set share.auto.offset.reset=earliest on (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if bootstrap == "" || group == "" {
		return errors.New("--bootstrap and --group are required")
	}
	return freshGroup(ctx, bootstrap, group)
}
