package formattest

import (
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// CheckBatch checks what a decoder promises about the batches built from
// it, beyond arrow-go's own validation: strings are UTF-8, and NOT NULL
// columns, array elements and map values hold no null.
func CheckBatch(rec arrow.RecordBatch, cols []types.Column) error {
	if err := array.ValidateRecordFull(rec); err != nil {
		return err
	}
	for i, c := range cols {
		if err := checkArray(rec.Column(i), c.Type, c.Name); err != nil {
			return err
		}
	}
	return nil
}

// CheckRefused checks what a decoder promises of a value it refuses with
// err: err is a *table.DecodeError, the decoder counted no row (n), and
// the builders bs are as they were (before is their Lengths then), so that
// the values decoded next line up with their rows.
func CheckRefused(err error, n int, before []int, bs []array.Builder) error {
	var de *table.DecodeError
	if !errors.As(err, &de) {
		return fmt.Errorf("error %T is not a *table.DecodeError: %v", err, err)
	}
	if n != 0 {
		return fmt.Errorf("%d rows with the error %v", n, err)
	}
	if after := Lengths(bs); !slices.Equal(before, after) {
		return fmt.Errorf("a failed decode changed the builders: %v -> %v", before, after)
	}
	return nil
}

func checkArray(arr arrow.Array, t *types.DataType, path string) error {
	if t.NotNull && arr.NullN() > 0 {
		return fmt.Errorf("%s: %d nulls in a NOT NULL column", path, arr.NullN())
	}
	switch a := arr.(type) {
	case *array.String:
		for i := 0; i < a.Len(); i++ {
			if a.IsValid(i) && !utf8.ValidString(a.Value(i)) {
				return fmt.Errorf("%s[%d]: invalid UTF-8 %q", path, i, a.Value(i))
			}
		}
	case *array.Map:
		if err := checkArray(a.Keys(), t.Key, path+".key"); err != nil {
			return err
		}
		return checkArray(a.Items(), t.Value, path+".value")
	case *array.List:
		return checkArray(a.ListValues(), t.Elem, path+"[]")
	case *array.Struct:
		for f := range t.Fields {
			// A null struct holds nulls in every field, NOT NULL or not;
			// only the fields of valid structs are checked.
			ft := t.Fields[f].Type
			child := a.Field(f)
			if ft.NotNull {
				for i := 0; i < a.Len(); i++ {
					if a.IsValid(i) && child.IsNull(i) {
						return fmt.Errorf("%s.%s[%d]: null in a NOT NULL field", path, t.Fields[f].Name, i)
					}
				}
				ft = ft.WithNotNull(false)
			}
			if err := checkArray(child, ft, path+"."+t.Fields[f].Name); err != nil {
				return err
			}
		}
	}
	return nil
}
