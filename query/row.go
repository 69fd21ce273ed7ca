package query

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/types"
)

// Row is one row of a result batch, read by column name (ignoring case), so
// that Go code need not index Arrow columns by hand. It is valid as long as
// its batch is: until the next call of Next for Rows.Row, until Done for
// Held.Row.
type Row struct {
	cols []types.Column
	rec  arrow.RecordBatch
	i    int
}

// ErrNull is returned by Row's typed accessors for a NULL value, and by
// Scan for a NULL into a field that cannot hold it (use a pointer field).
var ErrNull = errors.New("NULL value")

// Row is row i of the current batch.
func (r *Rows) Row(i int) (Row, error) {
	if r.curOut == nil {
		return Row{}, ErrNoBatch
	}
	if i < 0 || i >= int(r.curOut.NumRows()) {
		return Row{}, fmt.Errorf("row %d out of range: the current batch has %d rows", i, r.curOut.NumRows())
	}
	return Row{cols: r.plan.Columns(), rec: r.curOut, i: i}, nil
}

// Scan copies row i of the current batch into the struct dst points to;
// see Row.Scan.
func (r *Rows) Scan(i int, dst any) error {
	row, err := r.Row(i)
	if err != nil {
		return err
	}
	return row.Scan(dst)
}

// Columns are the row's columns.
func (r Row) Columns() []types.Column { return r.cols }

// Index is the row's position in its batch.
func (r Row) Index() int { return r.i }

func (r Row) col(name string) (int, error) {
	for k, c := range r.cols {
		if strings.EqualFold(c.Name, name) {
			return k, nil
		}
	}
	names := make([]string, len(r.cols))
	for k, c := range r.cols {
		names[k] = c.Name
	}
	return 0, fmt.Errorf("no column '%s' in the result (columns: %s)", options.Cut(name), strings.Join(names, ", "))
}

// IsNull reports whether the column's value is NULL.
func (r Row) IsNull(name string) (bool, error) {
	k, err := r.col(name)
	if err != nil {
		return false, err
	}
	return r.rec.Column(k).IsNull(r.i), nil
}

// Value is the column's value as a Go value, nil for NULL: string (CHAR,
// VARCHAR), bool, []byte (BINARY, VARBINARY), int64 (TINYINT to BIGINT),
// float64 (FLOAT, DOUBLE), string (DECIMAL, its exact digits), time.Time
// (DATE, TIMESTAMP in UTC, TIMESTAMP_LTZ), time.Duration (TIME, since
// midnight), and the text the shell shows for ARRAY, MAP and ROW.
func (r Row) Value(name string) (any, error) {
	k, err := r.col(name)
	if err != nil {
		return nil, err
	}
	return r.value(k), nil
}

func (r Row) value(k int) any {
	a, t := r.rec.Column(k), r.cols[k].Type
	if a.IsNull(r.i) {
		return nil
	}
	switch v := a.(type) {
	case *array.String:
		return v.Value(r.i)
	case *array.Boolean:
		return v.Value(r.i)
	case *array.Binary:
		return append([]byte(nil), v.Value(r.i)...)
	case *array.FixedSizeBinary:
		return append([]byte(nil), v.Value(r.i)...)
	case *array.Int8:
		return int64(v.Value(r.i))
	case *array.Int16:
		return int64(v.Value(r.i))
	case *array.Int32:
		return int64(v.Value(r.i))
	case *array.Int64:
		return v.Value(r.i)
	case *array.Float32:
		return float64(v.Value(r.i))
	case *array.Float64:
		return v.Value(r.i)
	case *array.Date32:
		return v.Value(r.i).ToTime().UTC()
	case *array.Time32:
		return time.Duration(v.Value(r.i)) * v.DataType().(*arrow.Time32Type).Unit.Multiplier()
	case *array.Time64:
		return time.Duration(v.Value(r.i)) * v.DataType().(*arrow.Time64Type).Unit.Multiplier()
	case *array.Timestamp:
		return v.Value(r.i).ToTime(v.DataType().(*arrow.TimestampType).Unit).UTC()
	}
	s, _ := render.Formatter(a, t)(r.i)
	return s
}

// nonNull is the column's value, or an error for an unknown column or NULL.
func (r Row) nonNull(name string) (int, any, error) {
	k, err := r.col(name)
	if err != nil {
		return 0, nil, err
	}
	v := r.value(k)
	if v == nil {
		return k, nil, fmt.Errorf("column '%s': %w", options.Cut(r.cols[k].Name), ErrNull)
	}
	return k, v, nil
}

// String is the column's value as text: a string column as it is, any
// other as the shell shows it (DECIMAL with its exact digits). NULL is an
// error wrapping ErrNull.
func (r Row) String(name string) (string, error) {
	k, _, err := r.nonNull(name)
	if err != nil {
		return "", err
	}
	s, _ := render.Formatter(r.rec.Column(k), r.cols[k].Type)(r.i)
	return s, nil
}

// Int64 is an integer column's value (TINYINT to BIGINT).
func (r Row) Int64(name string) (int64, error) {
	k, v, err := r.nonNull(name)
	if err != nil {
		return 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return 0, r.typeError(k, "an integer")
	}
	return n, nil
}

// Float64 is a numeric column's value: FLOAT, DOUBLE, an integer, or a
// DECIMAL (rounded to the nearest float64).
func (r Row) Float64(name string) (float64, error) {
	k, v, err := r.nonNull(name)
	if err != nil {
		return 0, err
	}
	return r.toFloat(k, v)
}

func (r Row) toFloat(k int, v any) (float64, error) {
	switch v := v.(type) {
	case float64:
		return v, nil
	case int64:
		return float64(v), nil
	case string:
		if r.cols[k].Type.Kind == types.Decimal {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, r.typeError(k, "a number")
}

// Bool is a BOOLEAN column's value.
func (r Row) Bool(name string) (bool, error) {
	k, v, err := r.nonNull(name)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, r.typeError(k, "a BOOLEAN")
	}
	return b, nil
}

// Time is a DATE, TIMESTAMP or TIMESTAMP_LTZ column's value, in UTC.
func (r Row) Time(name string) (time.Time, error) {
	k, v, err := r.nonNull(name)
	if err != nil {
		return time.Time{}, err
	}
	t, ok := v.(time.Time)
	if !ok {
		return time.Time{}, r.typeError(k, "a DATE or TIMESTAMP")
	}
	return t, nil
}

// Bytes is a BINARY, VARBINARY or string column's value (a copy).
func (r Row) Bytes(name string) ([]byte, error) {
	k, v, err := r.nonNull(name)
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case []byte:
		return v, nil
	case string:
		if isText(r.cols[k].Type.Kind) {
			return []byte(v), nil
		}
	}
	return nil, r.typeError(k, "bytes or a string")
}

func isText(k types.Kind) bool { return k == types.Char || k == types.Varchar }

func (r Row) typeError(k int, want string) error {
	return fmt.Errorf("column '%s' is %s, not %s", options.Cut(r.cols[k].Name), r.cols[k].Type, want)
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()
	bytesType    = reflect.TypeFor[[]byte]()
)

// Scan copies the row into the struct dst points to. A field takes the
// column its `kshare:"name"` tag names, or else the column named as the
// field is (ignoring case); `kshare:"-"` skips a field. A tagged field
// without its column is an error, an untagged one is left alone, and so are
// columns without a field. Values convert as the typed accessors do: a
// string field takes any column as text; integer fields take integer
// columns (an error if the value does not fit); float fields numbers;
// bool, []byte, time.Time and time.Duration (TIME) their columns; an `any`
// field takes Value. NULL goes into a pointer field (*int64, say) as nil,
// and into any other as an error wrapping ErrNull.
func (r Row) Scan(dst any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("scan: want a pointer to a struct, got %T", dst)
	}
	s := v.Elem()
	st := s.Type()
	for f := 0; f < st.NumField(); f++ {
		sf := st.Field(f)
		if !sf.IsExported() {
			continue
		}
		name, tagged := sf.Tag.Lookup("kshare")
		if name == "-" {
			continue
		}
		if !tagged || name == "" {
			name, tagged = sf.Name, false
		}
		k, err := r.col(name)
		if err != nil {
			if tagged {
				return fmt.Errorf("scan: field %s: %w", sf.Name, err)
			}
			continue
		}
		if err := r.assign(s.Field(f), k); err != nil {
			return fmt.Errorf("scan: field %s: %w", sf.Name, err)
		}
	}
	return nil
}

// assign sets fv to column k's value.
func (r Row) assign(fv reflect.Value, k int) error {
	val := r.value(k)
	if fv.Kind() == reflect.Pointer {
		if val == nil {
			fv.SetZero()
			return nil
		}
		p := reflect.New(fv.Type().Elem())
		if err := r.assignValue(p.Elem(), k, val); err != nil {
			return err
		}
		fv.Set(p)
		return nil
	}
	if val == nil {
		if fv.Kind() == reflect.Interface {
			fv.SetZero()
			return nil
		}
		return fmt.Errorf("column '%s': %w; use a pointer field to scan NULL", options.Cut(r.cols[k].Name), ErrNull)
	}
	return r.assignValue(fv, k, val)
}

func (r Row) assignValue(fv reflect.Value, k int, val any) error {
	t := fv.Type()
	switch {
	case t == timeType:
		tm, ok := val.(time.Time)
		if !ok {
			return r.typeError(k, "a DATE or TIMESTAMP")
		}
		fv.Set(reflect.ValueOf(tm))
		return nil
	case t == durationType:
		d, ok := val.(time.Duration)
		if !ok {
			return r.typeError(k, "a TIME")
		}
		fv.SetInt(int64(d))
		return nil
	case t == bytesType:
		switch b := val.(type) {
		case []byte:
			fv.SetBytes(b)
			return nil
		case string:
			if isText(r.cols[k].Type.Kind) {
				fv.SetBytes([]byte(b))
				return nil
			}
		}
		return r.typeError(k, "bytes or a string")
	}
	switch t.Kind() {
	case reflect.String:
		s, _ := render.Formatter(r.rec.Column(k), r.cols[k].Type)(r.i)
		fv.SetString(s)
	case reflect.Bool:
		b, ok := val.(bool)
		if !ok {
			return r.typeError(k, "a BOOLEAN")
		}
		fv.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := val.(int64)
		if !ok {
			return r.typeError(k, "an integer")
		}
		if fv.OverflowInt(n) {
			return fmt.Errorf("column '%s': %d does not fit in %s", options.Cut(r.cols[k].Name), n, t)
		}
		fv.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := val.(int64)
		if !ok {
			return r.typeError(k, "an integer")
		}
		if n < 0 || fv.OverflowUint(uint64(n)) {
			return fmt.Errorf("column '%s': %d does not fit in %s", options.Cut(r.cols[k].Name), n, t)
		}
		fv.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		f, err := r.toFloat(k, val)
		if err != nil {
			return err
		}
		if t.Kind() == reflect.Float32 && !math.IsInf(f, 0) && math.Abs(f) > math.MaxFloat32 {
			return fmt.Errorf("column '%s': %v does not fit in float32", options.Cut(r.cols[k].Name), f)
		}
		fv.SetFloat(f)
	case reflect.Interface:
		if !reflect.TypeOf(val).AssignableTo(t) {
			return fmt.Errorf("column '%s': a %T does not go into %s", options.Cut(r.cols[k].Name), val, t)
		}
		fv.Set(reflect.ValueOf(val))
	default:
		return fmt.Errorf("column '%s' (%s): cannot scan into %s", options.Cut(r.cols[k].Name), r.cols[k].Type, t)
	}
	return nil
}

// RecordBatch is the batch the row is in; the row is at Index.
func (r Row) RecordBatch() arrow.RecordBatch { return r.rec }
