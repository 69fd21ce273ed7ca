// Package named is what kshare's registries share: components kept by a
// name that is registered once (table's connectors and formats, model's
// providers). A Set finds a component by its exact name, with an error for
// an unknown one that suggests the nearest name and lists the known ones,
// and lists the components sorted by name. A name registered twice, or an
// empty one, is a programming error and panics at start-up.
//
// It may import options, for the "did you mean" and the quoting of names
// in messages.
package named
