// Package filesystem is Flink's 'filesystem' connector, write side: INSERT
// INTO a table with 'connector' = 'filesystem' writes its rows as part
// files into the directory 'path', in 'format' csv (a header, then RFC
// 4180 rows), json (one object a line, the json format's encoder) or
// parquet.
//
// A part is written under a hidden temporary name,
// .part-<uuid>-<n>.<ext>.inprogress, and committed by syncing it, renaming
// it to part-<uuid>-<n>.<ext> and syncing the directory: a file under a
// final name is always whole. The rows of a part are acknowledged (their
// source records accepted) only once the part is committed; a part that
// is not committed (the job stopped, failed, or the process died) has its
// records released, or left to their lock's expiry, and they come again.
//
// When a part ends is the rolling policy (sinkspec.FilesystemOptions):
// its size, its age, a quiet spell, and the rows it holds. The last two
// exist because a part's rows hold their records: the share group's
// member that delivered them polls again only once they are settled, and
// the broker caps the records locked per partition, so a part that waited
// for size or age alone would stall its own source.
//
// Tables of this connector cannot be read (yet): a query over one fails at
// Open, naming INSERT INTO as its use.
//
// Importing this package registers the connector.
package filesystem
