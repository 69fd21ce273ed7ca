// Package orders makes the benchmark's records: JSON orders such as
// {"order_id":1001,"customer_id":"C042","quantity":2,"price":25.50}.
//
// Record i is a pure function of i, so the loader and the contestants agree
// without talking: the suite knows, for instance, exactly how many of the
// first n orders have quantity > 1 and can give kshare that as its
// --max-rows for the WHERE contestant.
//
// It owns the shape of an order (Order), its JSON, and the counts the
// suite checks results against (CountQuantityAbove). It imports nothing of
// kshare's: the loader, the contestants and the checks all read the same
// function.
package orders
