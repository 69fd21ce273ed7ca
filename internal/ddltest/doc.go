// Package ddltest holds what the tests of DDL (package parse's scenario
// files, package table's catalog tests) bind against: a registry of its
// own (Registry) with fakes of the kafka-sharegroup connector, of the
// write-only 'print', 'blackhole', 'filesystem' and 'jdbc' (which takes a
// PRIMARY KEY), and of the json and raw formats, each carrying the real
// declarations (sharegroup/spec.go, sinks/sinkspec, format/*/spec.go),
// next to the real 'kafka' and 'upsert-kafka' connectors, whose NewSource
// does no I/O. The messages a test sees are thus the real ones while no
// broker, file or decoder is involved.
//
// It is for tests only. It may import table (the registry and the
// binding), flow (the source its fake connector opens), types (the
// columns), options, the connectors whose declarations it carries
// (sharegroup, kafka, sinks/sinkspec) and format/json and format/raw; never
// the planner (query).
package ddltest
