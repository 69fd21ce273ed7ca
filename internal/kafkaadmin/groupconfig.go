package kafkaadmin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Requester issues one Kafka request. *kgo.Client implements it; an
// interface keeps this package free of client construction and lets callers
// pass whatever client they already hold.
type Requester interface {
	Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
}

// ErrNoConfig is returned by SetShareGroupConfig when cfg is empty: an empty
// IncrementalAlterConfigs would succeed and hide a caller's mistake.
var ErrNoConfig = errors.New("no group config to set")

// SetShareGroupConfig sets the given group-level configs (for example
// share.auto.offset.reset=earliest or share.record.lock.duration.ms=5000) on
// the group named group, leaving its other configs as they are, and waits
// until the broker describes them so (see awaitGroupConfig). The group
// need not exist yet: a share group reads its configs when it first fetches,
// which is why share.auto.offset.reset must be set before the first consumer
// joins.
//
// kadm (v1.20) has no call for GROUP config resources, so this builds the
// IncrementalAlterConfigs request itself (resource type GROUP, operation
// SET). The broker answers per resource; a resource's error code is the
// only sign that it refused, so it is checked and returned as a
// *RefusedError wrapping the matching kerr error (use errors.Is, e.g. with
// kerr.InvalidConfig or kerr.GroupAuthorizationFailed).
func SetShareGroupConfig(ctx context.Context, cl Requester, group string, cfg map[string]string) error {
	if group == "" {
		return errors.New("setting share group config: empty group name")
	}
	if len(cfg) == 0 {
		return fmt.Errorf("setting config of share group %q: %w", group, ErrNoConfig)
	}

	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	// Sorted so that requests (and any error naming a key) are
	// reproducible.
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name = k
		c.Op = kmsg.IncrementalAlterConfigOpSet
		v := cfg[k]
		c.Value = &v
		res.Configs = append(res.Configs, c)
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources = append(req.Resources, res)

	kresp, err := cl.Request(ctx, req)
	if err != nil {
		return fmt.Errorf("setting config of share group %q: %w", group, err)
	}
	resp, ok := kresp.(*kmsg.IncrementalAlterConfigsResponse)
	if !ok {
		return fmt.Errorf("setting config of share group %q: unexpected response type %T", group, kresp)
	}
	found := false
	for _, r := range resp.Resources {
		if r.ResourceType != kmsg.ConfigResourceTypeGroupConfig || r.ResourceName != group {
			continue
		}
		found = true
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			re := &RefusedError{Group: group, Keys: keys, Err: err}
			if r.ErrorMessage != nil {
				re.Msg = *r.ErrorMessage
			}
			return re
		}
	}
	if !found {
		return fmt.Errorf("setting config of share group %q: the broker's answer does not mention the group", group)
	}
	return awaitGroupConfig(ctx, cl, group, cfg)
}

// awaitGroupConfig waits until the broker describes the group's configs as
// cfg sets them. Kafka answers IncrementalAlterConfigs once the controller
// has committed the change, and the broker applies it from its metadata
// log a moment later: on a loaded machine a describe sent at once showed
// the old value in a quarter of 200 tries (Kafka 4.3.1, up to 6 ms late),
// and a consumer that joined in that moment started the group at the
// latest offset while the caller had set earliest. The wait is on the
// broker the request goes to; on a cluster of several brokers another may
// apply the change a moment later still.
func awaitGroupConfig(ctx context.Context, cl Requester, group string, cfg map[string]string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, configApplyWait)
		defer cancel()
	}
	pause := 2 * time.Millisecond
	for {
		cs, err := DescribeGroupConfigs(ctx, cl, group)
		if err != nil {
			return fmt.Errorf("setting config of share group %q: the broker took it, but reading it back failed: %w", group, err)
		}
		pending := pendingConfigs(cs, cfg)
		if len(pending) == 0 {
			return nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("setting config of share group %q: the broker took it, but still describes %v as before: %w", group, pending, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// configApplyWait bounds awaitGroupConfig when its context has no
// deadline: a broker applies a committed change in milliseconds.
const configApplyWait = 30 * time.Second

// pendingConfigs are the keys of cfg whose value cs does not show yet,
// sorted.
func pendingConfigs(cs []GroupConfig, cfg map[string]string) []string {
	var pending []string
	for k, v := range cfg {
		if !slices.ContainsFunc(cs, func(c GroupConfig) bool { return c.Name == k && c.Value == v }) {
			pending = append(pending, k)
		}
	}
	slices.Sort(pending)
	return pending
}

// RefusedError is SetShareGroupConfig's error when the broker refuses the
// change: Err is the kerr error of its code, Msg the broker's own words
// (which say why, e.g. "Value must be at least 1000"), when it sent any.
type RefusedError struct {
	Group string
	Keys  []string
	Err   error
	Msg   string
}

func (e *RefusedError) Error() string {
	if e.Msg != "" {
		return fmt.Sprintf("setting config of share group %q (%v): %v (broker: %s)", e.Group, e.Keys, e.Err, e.Msg)
	}
	return fmt.Sprintf("setting config of share group %q (%v): %v", e.Group, e.Keys, e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// GroupConfig is one config of a group as DescribeConfigs reports it.
type GroupConfig struct {
	Name  string
	Value string // empty when the broker sends no value (a sensitive one)
	// Source says where the value comes from: GROUP_CONFIG when the group
	// sets it, else the broker's own setting (STATIC_BROKER_CONFIG,
	// DYNAMIC_DEFAULT_BROKER_CONFIG) or Kafka's default (DEFAULT_CONFIG).
	Source kmsg.ConfigSource
}

// DescribeGroupConfigs returns every config the broker reports for the group
// named group (share.*, consumer.* and streams.* alike: the GROUP resource
// does not know the group's type), in the broker's order. As with
// SetShareGroupConfig, kadm has no call for GROUP resources, and a
// resource's error code is the only sign of a refusal: it is returned
// wrapped as the matching kerr error.
func DescribeGroupConfigs(ctx context.Context, cl Requester, group string) ([]GroupConfig, error) {
	all, err := DescribeGroupsConfigs(ctx, cl, group)
	return all[group], err
}

// DescribeGroupsConfigs is DescribeGroupConfigs for several groups in one
// request, keyed by group. The first group the broker refuses fails the
// whole call.
func DescribeGroupsConfigs(ctx context.Context, cl Requester, groups ...string) (map[string][]GroupConfig, error) {
	if len(groups) == 0 {
		return map[string][]GroupConfig{}, nil
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, g := range groups {
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
		res.ResourceName = g
		req.Resources = append(req.Resources, res)
	}
	what := fmt.Sprintf("group %q", groups[0])
	if len(groups) > 1 {
		what = fmt.Sprintf("%d groups", len(groups))
	}
	kresp, err := cl.Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("describing configs of %s: %w", what, err)
	}
	resp, ok := kresp.(*kmsg.DescribeConfigsResponse)
	if !ok {
		return nil, fmt.Errorf("describing configs of %s: unexpected response type %T", what, kresp)
	}
	out := make(map[string][]GroupConfig, len(groups))
	for _, r := range resp.Resources {
		if r.ResourceType != kmsg.ConfigResourceTypeGroupConfig {
			continue
		}
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			if r.ErrorMessage != nil && *r.ErrorMessage != "" {
				return nil, fmt.Errorf("describing configs of group %q: %w (broker: %s)", r.ResourceName, err, *r.ErrorMessage)
			}
			return nil, fmt.Errorf("describing configs of group %q: %w", r.ResourceName, err)
		}
		cs := make([]GroupConfig, 0, len(r.Configs))
		for _, c := range r.Configs {
			gc := GroupConfig{Name: c.Name, Source: c.Source}
			if c.Value != nil {
				gc.Value = *c.Value
			}
			cs = append(cs, gc)
		}
		out[r.ResourceName] = cs
	}
	for _, g := range groups {
		if _, ok := out[g]; !ok {
			return nil, fmt.Errorf("describing configs of group %q: the broker's answer does not mention the group", g)
		}
	}
	return out, nil
}
