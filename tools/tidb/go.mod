// A wrapper module with no code of its own: it names TiDB's server as a
// tool, so `go build github.com/pingcap/tidb/cmd/tidb-server` builds it
// from the Go module proxy. Neither TiDB's source nor its binary is ever
// committed; tidb.sh builds into a cache folder outside the repository.
module isoharness/tools/tidb

go 1.26

tool github.com/pingcap/tidb/cmd/tidb-server

require (
	github.com/pingcap/tidb v1.1.0-beta.0.20260724063146-0a6cfba9f749
	github.com/pingcap/tidb/pkg/parser v0.0.0-20260724063146-0a6cfba9f749
)

// The module zip of TiDB leaves out pkg/parser, a module of its own that
// TiDB's go.mod replaces with ./pkg/parser; a dependency's replace lines are
// ignored, so the parser is pinned here at the same commit.
replace github.com/pingcap/tidb/pkg/parser => github.com/pingcap/tidb/pkg/parser v0.0.0-20260724063146-0a6cfba9f749

// TiDB's own non-local replace lines, copied with
// `go mod edit -json` from its go.mod at the same commit.
replace (
	github.com/apache/arrow-go/v18 => github.com/joechenrh/arrow-go/v18 v18.0.0-20250911101656-62c34c9a3b82
	github.com/go-ldap/ldap/v3 => github.com/YangKeao/ldap/v3 v3.4.5-0.20230421065457-369a3bab1117
	sourcegraph.com/sourcegraph/appdash => github.com/sourcegraph/appdash v0.0.0-20190731080439-ebfcffb1b5c0
	sourcegraph.com/sourcegraph/appdash-data => github.com/sourcegraph/appdash-data v0.0.0-20151005221446-73f23eafcf67
)
