package loki

import (
	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/storage/logstore"
)

// The log store takes the LogQL engine's optional pushdowns (this package
// imports both; neither may import the other). A signature drift would
// silently turn them off, so it is a compile error here.
var (
	_ logql.Source             = (*logstore.Store)(nil)
	_ logql.MetadataHintSource = (*logstore.Store)(nil)
	_ logql.TimestampSource    = (*logstore.Store)(nil)
)
