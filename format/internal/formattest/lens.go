package formattest

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// Lengths lists the length of every builder in the trees of bs, children
// after their parent, and the data length of binary builders, so that two
// calls tell whether anything at all was appended in between.
func Lengths(bs []array.Builder) []int {
	var out []int
	for _, b := range bs {
		out = lengths(out, b)
	}
	return out
}

func lengths(out []int, b array.Builder) []int {
	out = append(out, b.Len())
	switch b := b.(type) {
	case *array.BinaryBuilder:
		out = append(out, b.DataLen())
	case *array.StringBuilder:
		out = append(out, b.DataLen())
	case *array.ListBuilder:
		out = lengths(out, b.ValueBuilder())
	case *array.MapBuilder:
		out = lengths(out, b.KeyBuilder())
		out = lengths(out, b.ItemBuilder())
	case *array.StructBuilder:
		for i := 0; i < b.NumField(); i++ {
			out = lengths(out, b.FieldBuilder(i))
		}
	}
	return out
}

// Aligned checks that the builders hold rows rows each, and that every
// struct's fields are as long as the struct and every map's keys as its
// items.
func Aligned(bs []array.Builder, rows int) error {
	for i, b := range bs {
		if b.Len() != rows {
			return fmt.Errorf("column %d holds %d values, want %d", i, b.Len(), rows)
		}
		if err := aligned(b); err != nil {
			return fmt.Errorf("column %d: %w", i, err)
		}
	}
	return nil
}

func aligned(b array.Builder) error {
	switch b := b.(type) {
	case *array.ListBuilder:
		return aligned(b.ValueBuilder())
	case *array.MapBuilder:
		if b.KeyBuilder().Len() != b.ItemBuilder().Len() {
			return fmt.Errorf("map with %d keys and %d items", b.KeyBuilder().Len(), b.ItemBuilder().Len())
		}
		if err := aligned(b.KeyBuilder()); err != nil {
			return err
		}
		return aligned(b.ItemBuilder())
	case *array.StructBuilder:
		for i := 0; i < b.NumField(); i++ {
			f := b.FieldBuilder(i)
			if f.Len() != b.Len() {
				return fmt.Errorf("struct of %d with field %d of %d", b.Len(), i, f.Len())
			}
			if err := aligned(f); err != nil {
				return err
			}
		}
	}
	return nil
}
