package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/options"
)

// Sentinel errors; every error of this package that has one of these causes
// wraps it.
var (
	// ErrUnknownGroup: no group of that name exists.
	ErrUnknownGroup = errors.New("unknown share group")
	// ErrNotShareGroup: the group exists but is of another type (classic,
	// consumer or streams).
	ErrNotShareGroup = errors.New("not a share group")
	// ErrGroupNotEmpty: a reset or drop of a group that has members.
	ErrGroupNotEmpty = errors.New("share group has members")
	// ErrNoOffsets: a reset without a topic of a group that has no start
	// offsets yet, so there is nothing to move.
	ErrNoOffsets = errors.New("share group has no start offsets")
	// ErrUnknownTopic: no topic of that name exists.
	ErrUnknownTopic = errors.New("unknown topic")
	// ErrFutureTimestamp: a reset to a time that has not come yet.
	ErrFutureTimestamp = errors.New("timestamp in the future")
	// ErrOffsetOutOfRange: a reset to an offset outside a partition's log.
	ErrOffsetOutOfRange = errors.New("offset out of range")
	// ErrNotAuthorized: the broker refused the operation to this client's
	// principal.
	ErrNotAuthorized = errors.New("not authorized")
	// ErrNoShareGroups: the cluster does not offer share groups (older than
	// Kafka 4.2, or share groups turned off).
	ErrNoShareGroups = errors.New("share groups not supported")
	// ErrInvalidConfig: the broker refused a config's name or value: a
	// share group's (SetGroupConfig), or a new topic's configs, partition
	// count or replication factor (CreateTopic).
	ErrInvalidConfig = errors.New("invalid config")
	// ErrTopicExists: CreateTopic of a topic that exists.
	ErrTopicExists = errors.New("topic already exists")
)

// Admin runs the calls of this package on one cluster.
type Admin struct {
	cl  *kgo.Client
	adm *kadm.Client

	mu        sync.Mutex
	shareOK   bool // the cluster answered ApiVersions with the share APIs
	shareSeen bool
}

// New returns an Admin that sends its requests through cl. The caller owns
// cl and closes it after the last call; cl must not itself consume (no
// ConsumeTopics, group or share group options), since Sample starts a
// reader from cl's options.
func New(cl *kgo.Client) *Admin {
	return &Admin{cl: cl, adm: kadm.NewClient(cl)}
}

// shareSupported fails with ErrNoShareGroups unless every broker lists the
// share-group describe API. A broker that lacks it would otherwise make
// franz-go fail with an opaque "broker is too old" error. The answer is
// kept: a cluster does not lose share groups between two statements often
// enough to pay a round trip each time.
func (a *Admin) shareSupported(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.shareSeen {
		if !a.shareOK {
			return unsupported(nil)
		}
		return nil
	}
	vs, err := a.adm.ApiVersions(ctx)
	if err != nil {
		return fmt.Errorf("asking the cluster which requests it supports: %w", err)
	}
	var answered int
	var firstErr error
	for _, v := range vs {
		if v.Err != nil {
			firstErr = cmp.Or(firstErr, v.Err)
			continue
		}
		answered++
		if _, has := v.KeyMaxVersion(int16(kmsg.ShareGroupDescribe)); !has {
			a.shareSeen, a.shareOK = true, false
			return unsupported(nil)
		}
	}
	if answered == 0 {
		// No broker answered: the question stays open for the next call.
		if firstErr == nil {
			firstErr = errors.New("no broker answered")
		}
		return fmt.Errorf("asking the cluster which requests it supports: %w", firstErr)
	}
	a.shareSeen, a.shareOK = true, true
	return nil
}

func unsupported(cause error) error {
	return newErr(ErrNoShareGroups, cause, "the cluster does not support share groups (they need Kafka 4.2 or later with the share.version feature enabled)")
}

// Error is an error of this package: Msg is the whole message, Kind the
// sentinel it matches with errors.Is, Err the broker's or client's error
// behind it, if any.
type Error struct {
	Kind error
	Msg  string
	Err  error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap gives both Kind and Err to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

func newErr(kind, cause error, format string, args ...any) *Error {
	return &Error{Kind: kind, Err: cause, Msg: fmt.Sprintf(format, args...)}
}

// brokerErr turns the errors every call can meet into this package's: an
// authorization failure names the operation and the resource (op is an ACL
// operation as Kafka spells it, DESCRIBE or ALTER_CONFIGS; what is "share
// group 'g'" or "topic 't'"), a broker that does not know the request says
// that share groups are off. Other errors get doing ("describing share group
// 'g'") as context and stay wrapped.
func brokerErr(err error, doing, op, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.GroupAuthorizationFailed),
		errors.Is(err, kerr.TopicAuthorizationFailed),
		errors.Is(err, kerr.ClusterAuthorizationFailed):
		res := what
		switch {
		case errors.Is(err, kerr.TopicAuthorizationFailed) && !strings.HasPrefix(what, "topic"):
			res = "the topics of " + what
		case errors.Is(err, kerr.ClusterAuthorizationFailed):
			res = "the cluster"
		}
		return newErr(ErrNotAuthorized, err, "not authorized to %s %s: the broker refused %s on %s to this client's principal (its ACLs must allow that operation, or connect as a principal whose do)",
			strings.ToLower(strings.ReplaceAll(op, "_", " ")), what, op, res)
	case errors.Is(err, kerr.UnsupportedVersion):
		return unsupported(err)
	}
	return fmt.Errorf("%s: %w", doing, err)
}

// groupRef quotes a group's name for messages.
func groupRef(group string) string { return "share group '" + options.Cut(group) + "'" }

// describe returns the description of the share group named group, or an
// error that says why there is none: unknown (with the nearest share group's
// name), of another type, not authorized. doing ("describing share group
// 'g'") is the context of other errors.
func (a *Admin) describe(ctx context.Context, group, doing string) (kadm.DescribedShareGroup, error) {
	if group == "" {
		return kadm.DescribedShareGroup{}, fmt.Errorf("%s: empty share group name", doing)
	}
	if err := a.shareSupported(ctx); err != nil {
		return kadm.DescribedShareGroup{}, err
	}
	ds, err := a.describeRetried(ctx, group)
	if err != nil {
		return kadm.DescribedShareGroup{}, brokerErr(err, doing, "DESCRIBE", groupRef(group))
	}
	d, ok := ds[group]
	switch {
	case !ok:
		return d, fmt.Errorf("%s: the broker's answer does not mention the group", doing)
	// Kafka 4.3 answers GROUP_ID_NOT_FOUND for a group of another type
	// too; the group list tells the two apart.
	case errors.Is(d.Err, kerr.GroupIDNotFound), errors.Is(d.Err, kerr.InconsistentGroupProtocol):
		return d, a.noShareGroup(ctx, group, d.Err)
	case d.Err != nil:
		return d, brokerErr(d.Err, doing, "DESCRIBE", groupRef(group))
	}
	return d, nil
}

// describeRetried describes group, asking again while the broker says its
// coordinator is not ready: a new cluster creates the group coordinator's
// topic on the first request for any group, and franz-go hands that
// answer back rather than retrying it.
func (a *Admin) describeRetried(ctx context.Context, group string) (kadm.DescribedShareGroups, error) {
	wait := 50 * time.Millisecond
	for {
		ds, err := a.adm.DescribeShareGroups(ctx, group)
		if !errors.Is(err, kerr.CoordinatorNotAvailable) && !errors.Is(err, kerr.CoordinatorLoadInProgress) {
			return ds, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ds, err
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// noShareGroup explains why group is not a share group: it is a group of
// another type, or there is none (naming the nearest share group).
func (a *Admin) noShareGroup(ctx context.Context, group string, cause error) error {
	all, err := a.adm.ListGroupsByType(ctx, nil)
	if err != nil {
		// The group is unknown either way; the list only adds detail.
		return newErr(ErrUnknownGroup, cause, "%s does not exist", groupRef(group))
	}
	if g, ok := all[group]; ok && g.GroupType != "share" {
		return newErr(ErrNotShareGroup, cause, "'%s' is %s, not a share group", options.Cut(group), groupKind(g))
	}
	var shares []string
	for _, g := range all {
		if g.GroupType == "share" {
			shares = append(shares, g.Group)
		}
	}
	sort.Strings(shares)
	msg := groupRef(group) + " does not exist"
	if near := options.Closest(group, shares); near != "" {
		msg += fmt.Sprintf(" (did you mean '%s'?)", options.Cut(near))
	} else if len(shares) == 0 {
		msg += " (the cluster has no share groups)"
	}
	return newErr(ErrUnknownGroup, cause, "%s", msg)
}

func groupKind(g kadm.ListedGroup) string {
	switch g.GroupType {
	case "classic":
		if g.ProtocolType == "consumer" || g.ProtocolType == "" {
			return "a classic consumer group"
		}
		return "a classic group of protocol '" + g.ProtocolType + "'"
	case "consumer":
		return "a consumer group"
	case "streams":
		return "a streams group"
	case "":
		return "a group of another type"
	}
	return "a group of type '" + g.GroupType + "'"
}

// notEmpty is the error for a change that needs an empty group (verb is
// "reset", "drop"): it names up to five members, with their client id and
// host, so the user knows which readers to stop.
func notEmpty(group, verb string, members []kadm.ShareGroupMember, cause error) error {
	names := make([]string, 0, min(len(members), 6))
	for i, m := range members {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(members)-5))
			break
		}
		names = append(names, fmt.Sprintf("member %s (client id '%s', host %s)", m.MemberID, options.Cut(m.ClientID), m.ClientHost))
	}
	return newErr(ErrGroupNotEmpty, cause, "cannot %s %s: it has %d member(s): %s; stop its readers first (a reader that died leaves when its session times out)",
		verb, groupRef(group), len(members), strings.Join(names, ", "))
}

// topicNames lists the cluster's topics (internal ones left out), sorted.
func (a *Admin) topicNames(ctx context.Context) ([]string, error) {
	tds, err := a.adm.ListTopics(ctx)
	if err != nil {
		return nil, brokerErr(err, "listing topics", "DESCRIBE", "the topics")
	}
	return tds.Names(), nil
}

// unknownTopic is the error for a topic that does not exist, with the
// nearest topic's name.
func (a *Admin) unknownTopic(ctx context.Context, topic string, cause error) error {
	msg := fmt.Sprintf("topic '%s' does not exist", options.Cut(topic))
	if names, err := a.topicNames(ctx); err == nil {
		if near := options.Closest(topic, names); near != "" {
			msg += fmt.Sprintf(" (did you mean '%s'?)", options.Cut(near))
		}
	}
	return newErr(ErrUnknownTopic, cause, "%s", msg)
}
