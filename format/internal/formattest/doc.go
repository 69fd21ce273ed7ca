// Package formattest holds what the format packages' tests share: the
// reading of column lists written as in DDL (ParseColumns), the golden-file
// runners for decoding (RunGolden: testdata/*.txt) and for round trips
// through a format's encoder (RunEncodeGolden: testdata/encode/*.txt), a
// printer of record batches and values for those files, and checks of what
// every decoder promises: batches that match their columns (CheckBatch),
// builders that stay aligned, children included (Aligned), and values
// refused without a trace (CheckRefused).
//
// It is for tests only, and internal to format/. It may import table (the
// format contracts), types (the columns), options, parse (to read a golden
// file's column types as DDL does) and format/batch.
package formattest
