package orders

import (
	"encoding/json"
	"testing"
)

func TestRecordsAreValidAndVaried(t *testing.T) {
	seenQ := map[int]int{}
	seenC := map[int]bool{}
	const n = 20000
	for i := int64(0); i < n; i++ {
		o := At(i)
		var got struct {
			OrderID    int64   `json:"order_id"`
			CustomerID string  `json:"customer_id"`
			Quantity   int     `json:"quantity"`
			Price      float64 `json:"price"`
		}
		b := o.Append(nil)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("record %d is not JSON: %s: %v", i, b, err)
		}
		if got.OrderID != FirstID+i || len(got.CustomerID) != 4 || got.Quantity < 1 || got.Quantity > 5 {
			t.Fatalf("record %d: unexpected fields %+v from %s", i, got, b)
		}
		if c := int64(got.Price*100 + 0.5); c != o.Cents {
			t.Fatalf("record %d: price %v from %s, want %d cents", i, got.Price, b, o.Cents)
		}
		seenQ[got.Quantity]++
		seenC[o.Customer] = true
	}
	// Every quantity and most customers appear, roughly evenly: the filter
	// contestant's selectivity must not depend on luck.
	for q := 1; q <= 5; q++ {
		if c := seenQ[q]; c < n/5*9/10 || c > n/5*11/10 {
			t.Errorf("quantity %d appears %d times in %d records, want about %d", q, c, n, n/5)
		}
	}
	if len(seenC) < Customers*9/10 {
		t.Errorf("only %d distinct customers in %d records", len(seenC), n)
	}
	if got, want := CountQuantityAbove(n, 1), int64(n-seenQ[1]); got != want {
		t.Errorf("CountQuantityAbove = %d, want %d", got, want)
	}
}

func TestPriceFormatting(t *testing.T) {
	o := Order{ID: 1001, Customer: 1, Quantity: 2, Cents: 2550}
	if got, want := string(o.Append(nil)), `{"order_id":1001,"customer_id":"C001","quantity":2,"price":25.50}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	o.Cents = 105
	if got, want := string(o.Append(nil)), `{"order_id":1001,"customer_id":"C001","quantity":2,"price":1.05}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// With more keys the customers spread over all of them; with the default
// they are At's.
func TestAtKeys(t *testing.T) {
	const keys, n = 100_000, 400_000
	seen := map[int]bool{}
	for i := int64(0); i < n; i++ {
		o := AtKeys(i, keys)
		if o.Customer < 1 || o.Customer > keys {
			t.Fatalf("record %d: customer %d outside 1..%d", i, o.Customer, keys)
		}
		seen[o.Customer] = true
		if d := At(i); AtKeys(i, Customers) != d {
			t.Fatalf("record %d: AtKeys(i, Customers) = %+v, At = %+v", i, AtKeys(i, Customers), d)
		}
	}
	// 400,000 draws from 100,000 keys miss about e^-4 (1.8%) of them.
	if len(seen) < keys*95/100 {
		t.Errorf("only %d distinct customers of %d in %d records", len(seen), keys, n)
	}
	o := Order{ID: 1001, Customer: 12345, Quantity: 2, Cents: 2550}
	if got, want := string(o.Append(nil)), `{"order_id":1001,"customer_id":"C12345","quantity":2,"price":25.50}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
