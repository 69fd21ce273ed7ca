// Package pgtest gives tests a PostgreSQL server and the chores every
// PostgreSQL test repeats: a table of its own, statements, and rows read
// back as strings.
//
// A test asks for the server with URL. When KSHARE_PG_URL is set
// (scripts/test.sh starts a server with scripts/postgres.sh and sets it),
// every test shares that server. Otherwise the first call to URL starts one
// for the whole test binary with scripts/postgres.sh, and Main stops it
// when the tests end; a package that uses this package must therefore call
// Main from its TestMain. Without PostgreSQL on the machine the tests fail,
// saying what to install: they are never skipped, since a sink that is not
// tested is not known to work.
//
// Tests share one database, so every table they make must have a unique
// name: Table gives one (and drops it when the test ends).
//
// It imports nothing of kshare's.
package pgtest
