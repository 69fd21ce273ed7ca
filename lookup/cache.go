package lookup

import (
	"container/list"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// cache keeps the rows found for the last keys looked up: a key's rows are
// a slice of the batch its lookup answered (nil for a key with none, when
// missing keys are kept too), least recently used first out.
type cache struct {
	max                     int
	afterWrite, afterAccess time.Duration
	now                     func() time.Time
	byKey                   map[string]*list.Element
	order                   *list.List // of *entry, most recently used first
}

type entry struct {
	key      string
	rows     arrow.RecordBatch // nil: the key has no row
	written  time.Time
	accessed time.Time
}

func newCache(max int, afterWrite, afterAccess time.Duration) *cache {
	return &cache{max: max, afterWrite: afterWrite, afterAccess: afterAccess, now: time.Now,
		byKey: map[string]*list.Element{}, order: list.New()}
}

// get returns the rows kept for key; ok is false when none are kept (or
// they expired, and are dropped).
func (c *cache) get(key string, now time.Time) (rows arrow.RecordBatch, ok bool) {
	el, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*entry)
	if (c.afterWrite > 0 && now.Sub(e.written) >= c.afterWrite) || (c.afterAccess > 0 && now.Sub(e.accessed) >= c.afterAccess) {
		c.remove(el)
		return nil, false
	}
	e.accessed = now
	c.order.MoveToFront(el)
	return e.rows, true
}

// put keeps rows (retained here) for key, dropping the least recently used
// keys beyond max.
func (c *cache) put(key string, rows arrow.RecordBatch, now time.Time) {
	if el, ok := c.byKey[key]; ok {
		c.remove(el)
	}
	if rows != nil {
		rows.Retain()
	}
	c.byKey[key] = c.order.PushFront(&entry{key: key, rows: rows, written: now, accessed: now})
	for c.order.Len() > c.max {
		c.remove(c.order.Back())
	}
}

func (c *cache) remove(el *list.Element) {
	e := el.Value.(*entry)
	if e.rows != nil {
		e.rows.Release()
	}
	delete(c.byKey, e.key)
	c.order.Remove(el)
}

// len is the keys kept.
func (c *cache) len() int { return c.order.Len() }

// clear drops every key.
func (c *cache) clear() {
	for c.order.Len() > 0 {
		c.remove(c.order.Back())
	}
}
