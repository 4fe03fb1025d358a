package redisfilter

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// IsClusterRedirect reports whether err is, or wraps, a Redis Cluster
// redirection: a MOVED or ASK reply, which a node of a cluster sends for a
// key whose hash slot another node serves. A client that is not a
// cluster client (a redis.Client given one node's address) does not
// follow it, and the operation fails with that reply: the remedy is a
// redis.ClusterClient (or a redis.UniversalClient with IsClusterMode),
// not a retry. The filter is unchanged by the refused command.
func IsClusterRedirect(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
}
