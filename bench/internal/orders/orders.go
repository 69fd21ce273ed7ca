package orders

import "strconv"

// FirstID is the order_id of record 0; ids increase by one per record.
const FirstID = 1001

// Customers is how many distinct customer ids At draws from (C001..C999).
const Customers = 999

// Order is one record's fields.
type Order struct {
	ID       int64
	Customer int   // 1..Customers
	Quantity int   // 1..5
	Cents    int64 // price in cents, 1.00 to 999.99
}

// mix is SplitMix64's finaliser: a cheap, well-spread hash of i, so that the
// values look random yet record i is the same in every run.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// At returns record i.
func At(i int64) Order { return AtKeys(i, Customers) }

// AtKeys returns record i with its customer drawn from 1..customers
// instead of 1..Customers: the number of keys of a GROUP BY customer_id,
// which is what an aggregate's state grows with. Ids above 999 are written
// with as many digits as they need (C1000, C99999). customers must be
// positive.
func AtKeys(i int64, customers int) Order {
	h := mix(uint64(i))
	return Order{
		ID:       FirstID + i,
		Customer: 1 + int(h%uint64(customers)),
		Quantity: 1 + int((h>>20)%5),
		Cents:    100 + int64((h>>32)%99900),
	}
}

// Append appends o as one JSON object, without a newline, to b. It writes
// the bytes by hand because the loader makes millions of them and
// encoding/json would cost more than the producing.
func (o Order) Append(b []byte) []byte {
	b = append(b, `{"order_id":`...)
	b = strconv.AppendInt(b, o.ID, 10)
	b = append(b, `,"customer_id":"C`...)
	if o.Customer < 100 {
		b = append(b, '0')
	}
	if o.Customer < 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(o.Customer), 10)
	b = append(b, `","quantity":`...)
	b = strconv.AppendInt(b, int64(o.Quantity), 10)
	b = append(b, `,"price":`...)
	b = strconv.AppendInt(b, o.Cents/100, 10)
	b = append(b, '.')
	c := o.Cents % 100
	if c < 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, c, 10)
	return append(b, '}')
}

// CountQuantityAbove returns how many of records 0..n-1 have a quantity
// greater than q.
func CountQuantityAbove(n int64, q int) int64 {
	var c int64
	for i := int64(0); i < n; i++ {
		if At(i).Quantity > q {
			c++
		}
	}
	return c
}
