package raw

// This file declares, as data, the options of the raw format and the rule
// on its columns. It imports only options and table, so that table's tests
// can read it.

import (
	"fmt"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// Keys of the WITH clause that the raw format reads.
const (
	OptCharset    = "raw.charset"
	OptEndianness = "raw.endianness"
)

// Values of the raw options.
const (
	CharsetUTF8     = "UTF-8"
	CharsetUTF16BE  = "UTF-16BE"
	CharsetUTF16LE  = "UTF-16LE"
	CharsetISO88591 = "ISO-8859-1"
	CharsetASCII    = "US-ASCII"
	BigEndian       = "big-endian"
	LittleEndian    = "little-endian"
)

// Options are the raw format's keys, namespaced 'raw.' as in Flink.
var Options = &options.Set{
	Owner: "format 'raw'",
	Options: []options.Option{
		{Key: OptCharset, Type: options.Enum, Default: CharsetUTF8,
			Allowed:     []string{CharsetUTF8, CharsetUTF16BE, CharsetUTF16LE, CharsetISO88591, CharsetASCII},
			Description: "Charset of a value read into a CHAR, VARCHAR or STRING column."},
		{Key: OptEndianness, Type: options.Enum, Default: BigEndian, Allowed: []string{BigEndian, LittleEndian},
			Description: "Byte order of a value read into a numeric column (SMALLINT, INT, BIGINT, FLOAT, DOUBLE)."},
	},
}

// CheckColumns says whether raw can decode into cols, a table's physical
// columns: the whole value is one column, so there must be exactly one, of
// a type that a value's bytes can be read as.
func CheckColumns(cols []types.Column) error {
	if len(cols) != 1 {
		names := ""
		for i, c := range cols {
			if i > 0 {
				names += ", "
			}
			names += "'" + c.Name + "'"
		}
		if len(cols) == 0 {
			return fmt.Errorf("format 'raw' reads the whole value into one column: the table needs exactly one physical column, it has none; declare the column to read the value into")
		}
		return fmt.Errorf("format 'raw' reads the whole value into one column: the table needs exactly one physical column, it has %d (%s); make the others METADATA columns or use another format", len(cols), names)
	}
	c := cols[0]
	switch c.Type.Kind {
	case types.Char, types.Varchar, types.Binary, types.Varbinary, types.Boolean,
		types.TinyInt, types.SmallInt, types.Int, types.BigInt, types.Float, types.Double:
		return nil
	}
	return fmt.Errorf("format 'raw' cannot read a value as column '%s' of type %s (it reads CHAR, VARCHAR, STRING, BINARY, VARBINARY, BYTES, BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT or DOUBLE)", c.Name, c.Type)
}
