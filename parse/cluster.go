package parse

import (
	"strconv"
	"strings"
	"time"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// This file reads the statements about the cluster: topics and share
// groups (table/cluster.go).

// followedBy reports whether the tokens after the statement's first word
// are the keywords words.
func (p *parser) followedBy(words []string) bool {
	for i, w := range words {
		if !p.isKeyword(p.peekN(i+1), w) {
			return false
		}
	}
	return true
}

// skipWords passes the statement's first word and n more (the words
// statementKinds matched).
func (p *parser) skipWords(n int) {
	for range n + 1 {
		p.advance()
	}
}

func (p *parser) showTopics() (table.Statement, *SyntaxError) {
	p.skipWords(1)
	return &table.ShowTopics{}, nil
}

func (p *parser) showShareGroups() (table.Statement, *SyntaxError) {
	p.skipWords(2)
	return &table.ShowShareGroups{}, nil
}

// describeTopic reads DESCRIBE TOPIC name. DESCRIBE topic alone describes
// a table named topic.
func (p *parser) describeTopic() (table.Statement, *SyntaxError) {
	if p.isEnd(p.peekN(2)) {
		return p.describeTable()
	}
	p.skipWords(1)
	name, err := p.topicName("DESCRIBE TOPIC")
	if err != nil {
		return nil, err
	}
	return &table.DescribeTopic{Topic: name}, nil
}

// topicName reads a topic's name: in quotes ('orders-v1'), in backticks,
// or plain, where a plain name may run on through '.' and '-' (orders-v1,
// logs.app) as long as no space comes between, since topic names are
// spelled so more often than not.
func (p *parser) topicName(after string) (string, *SyntaxError) {
	t := p.peek()
	switch t.Kind {
	case String, QuotedIdent:
		p.advance()
		if t.Val == "" {
			return "", p.errorf(t, ErrSyntax, "expected a topic name after %s, got an empty one", after)
		}
		return t.Val, nil
	case Ident, Number:
	default:
		return "", p.errorf(t, ErrSyntax, "expected a topic name after %s ('orders-v1' in quotes, or orders), got %s", after, describe(t))
	}
	p.advance()
	name, end := t.Val, t.End
	for {
		n := p.peek()
		if n.Start != end || !(n.Kind == Ident || n.Kind == Number || p.isSymbol(n, ".") || p.isSymbol(n, "-")) {
			return name, nil
		}
		p.advance()
		name, end = name+n.Val, n.End
	}
}

// groupName reads a share group's name, a string in quotes.
func (p *parser) groupName(after string) (string, *SyntaxError) {
	return p.quotedName("the share group's name", "'billing'", after)
}

// quotedName reads a non-empty string literal that names what (a share
// group, a job) after the words after; example shows one.
func (p *parser) quotedName(what, example, after string) (string, *SyntaxError) {
	t := p.peek()
	if t.Kind != String || t.Val == "" {
		if t.Kind == String {
			return "", p.errorf(t, ErrSyntax, "expected %s after %s, got an empty string", what, after)
		}
		return "", p.errorf(t, ErrSyntax, "expected %s in quotes after %s (%s), got %s", what, after, example, describe(t))
	}
	p.advance()
	return t.Val, nil
}

func (p *parser) showJobs() (table.Statement, *SyntaxError) {
	p.skipWords(1)
	return &table.ShowJobs{}, nil
}

// stopJob reads STOP JOB 'id'. Flink's WITH SAVEPOINT and WITH DRAIN are
// refused: a job keeps no state to save, and what it holds is released.
func (p *parser) stopJob() (table.Statement, *SyntaxError) {
	p.skipWords(1)
	id, err := p.quotedName("the job's id", "'1'; SHOW JOBS lists them", "STOP JOB")
	if err != nil {
		return nil, err
	}
	if t := p.peek(); p.isKeyword(t, "WITH") {
		p.refuse(t, "STOP JOB ... WITH SAVEPOINT / DRAIN is not supported: a job keeps no state, and stopping releases what it holds")
		return nil, p.skipStatement()
	}
	return &table.StopJob{ID: id}, nil
}

// groupStatement passes the words "verb SHARE GROUP" of stmt and reads the
// group's name after them.
func (p *parser) groupStatement(stmt string) (string, *SyntaxError) {
	p.skipWords(2)
	return p.groupName(stmt)
}

func (p *parser) describeShareGroup() (table.Statement, *SyntaxError) {
	g, err := p.groupStatement("DESCRIBE SHARE GROUP")
	if err != nil {
		return nil, err
	}
	st := &table.DescribeShareGroup{Group: g}
	switch t := p.peek(); {
	case p.isKeyword(t, "MEMBERS"):
		st.Part = table.GroupMembers
	case p.isKeyword(t, "CONFIG"):
		st.Part = table.GroupConfig
	case p.isEnd(t):
		return st, nil
	default:
		return nil, p.errorf(t, ErrSyntax, "expected MEMBERS, CONFIG or the end of the statement after DESCRIBE SHARE GROUP %s, got %s", types.QuoteString(options.Cut(g)), describe(t))
	}
	p.advance()
	return st, nil
}

// alterShareGroup reads ALTER SHARE GROUP 'g' RESET TO ... [FOR TOPIC t]
// and ALTER SHARE GROUP 'g' SET ('key' = 'value', ...).
func (p *parser) alterShareGroup() (table.Statement, *SyntaxError) {
	g, err := p.groupStatement("ALTER SHARE GROUP")
	if err != nil {
		return nil, err
	}
	after := "ALTER SHARE GROUP " + types.QuoteString(options.Cut(g))
	t := p.peek()
	if p.isKeyword(t, "RESET") {
		p.advance()
		return p.resetShareGroup(g, after+" RESET")
	}
	if !p.isKeyword(t, "SET") {
		return nil, p.errorf(t, ErrSyntax, "expected RESET TO or SET after %s, got %s", after, describe(t))
	}
	set, serr := p.setList("ALTER SHARE GROUP ... SET needs at least one config: SET ('share.record.lock.duration.ms' = '60000')")
	if serr != nil {
		return nil, serr
	}
	return &table.AlterShareGroup{Group: g, Set: set}, nil
}

func (p *parser) resetShareGroup(g, after string) (table.Statement, *SyntaxError) {
	if err := p.expectKeyword("TO", " after "+after); err != nil {
		return nil, err
	}
	st := &table.ResetShareGroup{Group: g}
	t := p.peek()
	if t.Kind == Ident {
		st.To = table.ResetTarget(strings.ToUpper(t.Val))
	}
	switch st.To {
	case table.ResetEarliest, table.ResetLatest:
		p.advance()
	case table.ResetTimestamp:
		p.advance()
		v := p.peek()
		if v.Kind != String {
			return nil, p.errorf(v, ErrSyntax, "expected a time in quotes after TIMESTAMP ('2026-12-01 10:00:00', in UTC), got %s", describe(v))
		}
		at, perr := time.ParseInLocation(table.TimestampLayout, strings.TrimSpace(v.Val), time.UTC)
		if perr != nil {
			return nil, p.errorf(v, ErrSyntax, "TIMESTAMP %s is not a time: write it as '2026-12-01 10:00:00' (UTC, a fraction of a second allowed)", types.QuoteString(options.Cut(v.Val)))
		}
		p.advance()
		st.Time = at
	case table.ResetOffset:
		p.advance()
		v := p.peek()
		n, perr := strconv.ParseInt(v.Val, 10, 64)
		if v.Kind != Number || perr != nil || n < 0 {
			return nil, p.errorf(v, ErrSyntax, "expected an offset (a whole number, 0 or more) after OFFSET, got %s", describe(v))
		}
		p.advance()
		st.Offset = n
	default:
		return nil, p.errorf(t, ErrSyntax, "expected EARLIEST, LATEST, TIMESTAMP '...' or OFFSET n after RESET TO, got %s", describe(t))
	}
	if p.acceptKeywords("FOR") {
		if err := p.expectKeyword("TOPIC", " after FOR"); err != nil {
			return nil, err
		}
		name, err := p.topicName("FOR TOPIC")
		if err != nil {
			return nil, err
		}
		st.Topic = name
	} else if n := p.peek(); !p.isEnd(n) {
		return nil, p.errorf(n, ErrSyntax, "expected FOR TOPIC or the end of the statement after RESET TO %s, got %s", st.To, describe(n))
	}
	return st, nil
}

func (p *parser) dropShareGroup() (table.Statement, *SyntaxError) {
	g, err := p.groupStatement("DROP SHARE GROUP")
	if err != nil {
		return nil, err
	}
	return &table.DropShareGroup{Group: g}, nil
}

// createTopic reads CREATE TOPIC [IF NOT EXISTS] name [WITH ('key' =
// 'value', ...)]. The pairs are handed on as written: which keys are
// kshare's and which are topic configs is the engine's to say.
func (p *parser) createTopic() (table.Statement, *SyntaxError) {
	p.skipWords(1)
	st := &table.CreateTopic{IfNotExists: p.acceptKeywords("IF", "NOT", "EXISTS")}
	if t := p.peek(); p.isKeyword(t, "IF") && p.isKeyword(p.peekN(1), "EXISTS") {
		return nil, p.errorf(t, ErrSyntax, "CREATE TOPIC takes IF NOT EXISTS (IF EXISTS belongs to DROP TOPIC)")
	}
	name, err := p.topicName("CREATE TOPIC")
	if err != nil {
		return nil, err
	}
	st.Topic = name
	switch t := p.peek(); {
	case p.isKeyword(t, "WITH"):
		p.advance()
		kvs, err := p.withList()
		if err != nil {
			return nil, err
		}
		st.Options = kvs
	case !p.isEnd(t):
		return nil, p.errorf(t, ErrSyntax, "expected WITH ('partitions' = '3', ...) or the end of the statement after CREATE TOPIC %s, got %s",
			types.QuoteString(options.Cut(name)), describe(t))
	}
	return st, nil
}

// topicPattern are the characters of the patterns a user may try (glob,
// SQL LIKE, regular expressions); none is legal in a topic's name.
const topicPattern = "*?%[]^$|+()\\"

// dropTopic reads DROP TOPIC [IF EXISTS] name. Deleting a topic destroys
// its records, so the statement names exactly one topic: a pattern or a
// list is refused rather than read as a name.
func (p *parser) dropTopic() (table.Statement, *SyntaxError) {
	p.skipWords(1)
	st := &table.DropTopic{IfExists: p.acceptKeywords("IF", "EXISTS")}
	if t := p.peek(); p.isKeyword(t, "IF") && p.isKeyword(p.peekN(1), "NOT") {
		return nil, p.errorf(t, ErrSyntax, "DROP TOPIC takes IF EXISTS (IF NOT EXISTS belongs to CREATE TOPIC)")
	}
	at := p.peek()
	name, err := p.topicName("DROP TOPIC")
	if err != nil {
		return nil, err
	}
	st.Topic = name
	t := p.peek()
	switch {
	case strings.ContainsAny(name, topicPattern) || (t.Kind == Symbol && strings.Contains(topicPattern, t.Val)):
		p.refuse(at, "DROP TOPIC takes one topic's exact name, not a pattern: deleting a topic destroys its records, so each is named on its own")
		return nil, p.skipStatement()
	case p.isSymbol(t, ","):
		p.refuse(t, "DROP TOPIC drops one topic: write a DROP TOPIC for each")
		return nil, p.skipStatement()
	case !p.isEnd(t):
		return nil, p.errorf(t, ErrSyntax, "expected the end of the statement after DROP TOPIC %s, got %s", types.QuoteString(options.Cut(name)), describe(t))
	}
	return st, nil
}
