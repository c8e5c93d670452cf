// Package labelmode keeps label mode working for every ShardingConfig that asks for it: the shard-label webhook's
// registration lists exactly the resources those configs shard, and the backfill labels their objects the webhook
// missed. A resource the API server does not serve (yet) holds back none of the others: it is reported on the configs
// that name it and tried again later. The labeling itself lives in pkg/webhook/labels.
package labelmode
