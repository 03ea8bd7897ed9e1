"""pykv's own prose for COMMAND DOCS and COMMAND INFO: summaries, complexity, history, notes.

Redis's command metadata (arity, flags, key specs, arguments) is interface data and comes
from ``command_table.json``; the prose around it is written here, in pykv's own words.
Every command and subcommand of Redis 7.0 has a line, so documentation stays complete as
families add handlers. The tables are text (one ``name | field | field`` line each) parsed
once at import: data, not code.
"""
from __future__ import annotations

# name | summary | time complexity ("-": Redis documents none)
_SUMMARIES = """
acl | Access control lists: inspect and change users and their permissions. | Depends on the subcommand.
acl|cat | List the ACL categories, or the commands inside one category. | O(1)
acl|deluser | Remove ACL users and disconnect their clients. | O(1) amortised per user.
acl|dryrun | Tell whether a user could run a command, without running it. | O(1)
acl|genpass | Produce a random password suitable for an ACL user. | O(1)
acl|getuser | Describe the rules of one ACL user. | O(N), N = password, command and pattern rules of the user.
acl|help | Explain the ACL subcommands. | O(1)
acl|list | Every ACL user's rules in configuration-file syntax. | O(N), N = number of users.
acl|load | Reload the users from the ACL file. | O(N), N = number of users.
acl|log | Recent security events (denied commands, failed logins). | O(N), N = entries shown.
acl|save | Write the current users to the ACL file. | O(N), N = number of users.
acl|setuser | Create a user or change its rules. | O(N), N = rules given.
acl|users | The names of all ACL users. | O(N), N = number of users.
acl|whoami | The user this connection is logged in as. | O(1)
append | Add bytes to the end of a string (creating it if missing). | O(1) amortised.
asking | Cluster: let the next command reach a slot being imported. | O(1)
auth | Log the connection in as a user (or the default user). | O(N), N = characters of the password.
bgrewriteaof | Rebuild the append-only file in a background process. | O(1)
bgsave | Write a snapshot of the dataset from a background process. | O(1)
bitcount | Count the set bits of a string, optionally within a range. | O(N)
bitfield | Read and write integers of any width packed inside a string. | O(1) per operation.
bitfield_ro | BITFIELD restricted to GET operations. | O(1) per operation.
bitop | Combine strings bit by bit (AND, OR, XOR, NOT) into a key. | O(N)
bitpos | Position of the first 0 or 1 bit in a string. | O(N)
blmove | LMOVE that waits for the source list to have an element. | O(1)
blmpop | LMPOP that waits while all the lists are empty. | O(N+M), N = keys, M = elements popped.
blpop | Pop from the head of the first non-empty list, waiting if all are empty. | O(N), N = keys.
brpop | Pop from the tail of the first non-empty list, waiting if all are empty. | O(N), N = keys.
brpoplpush | RPOPLPUSH that waits for the source list to have an element. | O(1)
bzmpop | ZMPOP that waits while all the sorted sets are empty. | O(K) + O(M*log(N)), K = keys, M = members popped.
bzpopmax | Pop the highest-scored member of the first non-empty sorted set, waiting if needed. | O(log(N))
bzpopmin | Pop the lowest-scored member of the first non-empty sorted set, waiting if needed. | O(log(N))
client | Inspect and control client connections. | Depends on the subcommand.
client|caching | In OPTIN/OPTOUT tracking, opt the next command's keys in or out. | O(1)
client|getname | The name of this connection. | O(1)
client|getredir | The client receiving this connection's tracking invalidations. | O(1)
client|help | Explain the CLIENT subcommands. | O(1)
client|id | The unique id of this connection. | O(1)
client|info | Details about this connection, as one CLIENT LIST line. | O(1)
client|kill | Close the connections that match the given filters. | O(N), N = connections.
client|list | One line of details per connection. | O(N), N = connections.
client|no-evict | Exempt this connection from client eviction. | O(1)
client|pause | Hold commands from all clients for a while. | O(1)
client|reply | Switch this connection's replies on or off. | O(1)
client|setname | Name this connection. | O(1)
client|tracking | Turn server-assisted client-side caching on or off. | O(1), or O(N) with N prefixes.
client|trackinginfo | This connection's client-side caching settings. | O(1)
client|unblock | Wake a client waiting in a blocking command. | O(log N), N = blocked clients.
client|unpause | End a CLIENT PAUSE. | O(N), N = paused clients.
cluster | Cluster administration. | Depends on the subcommand.
cluster|addslots | Give hash slots to this node. | O(N), N = slots.
cluster|addslotsrange | Give ranges of hash slots to this node. | O(N), N = slots in the ranges.
cluster|bumpepoch | Raise this node's configuration epoch. | O(1)
cluster|count-failure-reports | How many nodes report a node as failing. | O(N), N = reports.
cluster|countkeysinslot | Number of keys stored in a hash slot. | O(1)
cluster|delslots | Take hash slots away from this node. | O(N), N = slots.
cluster|delslotsrange | Take ranges of hash slots away from this node. | O(N), N = slots in the ranges.
cluster|failover | Make this replica take over from its master. | O(1)
cluster|flushslots | Drop every slot this node owns. | O(1)
cluster|forget | Remove a node from this node's view of the cluster. | O(1)
cluster|getkeysinslot | Some key names stored in a hash slot. | O(N), N = keys returned.
cluster|help | Explain the CLUSTER subcommands. | O(1)
cluster|info | State of the cluster as this node sees it. | O(1)
cluster|keyslot | The hash slot of a key name. | O(N), N = bytes of the key.
cluster|links | This node's cluster bus connections. | O(N), N = links.
cluster|meet | Connect this node to another cluster node. | O(1)
cluster|myid | This node's id. | O(1)
cluster|nodes | The cluster configuration as this node sees it. | O(N), N = nodes.
cluster|replicas | The replicas of a master node. | O(N), N = replicas.
cluster|replicate | Make this node a replica of a master. | O(1)
cluster|reset | Reset this node's cluster state. | O(N), N = known nodes.
cluster|saveconfig | Write the cluster configuration to disk. | O(1)
cluster|set-config-epoch | Set the configuration epoch of a new node. | O(1)
cluster|setslot | Change the state of a hash slot on this node. | O(1)
cluster|shards | The cluster's shards and their nodes. | O(N), N = nodes.
cluster|slaves | Older name of CLUSTER REPLICAS. | O(N), N = replicas.
cluster|slots | Which nodes serve which slot ranges. | O(N), N = nodes.
command | Details about the server's commands. | O(N), N = commands.
command|count | How many commands the server has. | O(1)
command|docs | Documentation of some or all commands. | O(N), N = commands described.
command|getkeys | The key names in a full command line. | O(N), N = arguments.
command|getkeysandflags | The key names in a full command line, with how each is used. | O(N), N = arguments.
command|help | Explain the COMMAND subcommands. | O(1)
command|info | Details about some or all commands. | O(N), N = commands described.
command|list | Names of the commands, optionally filtered. | O(N), N = commands.
config | Read and change the configuration. | Depends on the subcommand.
config|get | Current values of the parameters matching patterns. | O(N), N = parameters.
config|help | Explain the CONFIG subcommands. | O(1)
config|resetstat | Zero the statistics INFO reports. | O(1)
config|rewrite | Write the running configuration to the config file. | O(1)
config|set | Change parameters at run time. | O(N), N = parameters set.
copy | Copy a key's value to another key. | O(N) for collections, O(1) for strings.
dbsize | Number of keys in the selected database. | O(1)
debug | Debugging and testing helpers. | Depends on the subcommand.
decr | Subtract one from an integer string. | O(1)
decrby | Subtract an amount from an integer string. | O(1)
del | Remove keys. | O(N) over keys, plus the size of any collection removed.
discard | Abandon the commands queued after MULTI. | O(N), N = queued commands.
dump | The value of a key in RDB serialised form. | O(1) to find the key, O(N*M) to serialise it.
echo | Reply with the given message. | O(1)
eval | Run a Lua script. | Depends on the script.
eval_ro | Run a Lua script that only reads. | Depends on the script.
evalsha | Run a cached Lua script by its SHA1. | Depends on the script.
evalsha_ro | Run a cached read-only Lua script by its SHA1. | Depends on the script.
exec | Run every command queued since MULTI. | Depends on the queued commands.
exists | Count how many of the given keys exist. | O(N), N = keys.
expire | Give a key a time to live in seconds. | O(1)
expireat | Make a key expire at a Unix time in seconds. | O(1)
expiretime | The Unix time in seconds at which a key expires. | O(1)
failover | Hand the master role over to a replica. | O(1)
fcall | Call a library function. | Depends on the function.
fcall_ro | Call a read-only library function. | Depends on the function.
flushall | Remove every key of every database. | O(N), N = keys.
flushdb | Remove every key of the selected database. | O(N), N = keys in the database.
function | Manage server-side function libraries. | Depends on the subcommand.
function|delete | Remove a function library. | O(1)
function|dump | All function libraries, serialised. | O(N), N = functions.
function|flush | Remove every function library. | O(N), N = functions.
function|help | Explain the FUNCTION subcommands. | O(1)
function|kill | Stop the function running now. | O(1)
function|list | Describe the loaded libraries. | O(N), N = functions.
function|load | Load a function library. | O(1), not counting the library's own code.
function|restore | Load libraries from a FUNCTION DUMP payload. | O(N), N = functions.
function|stats | State of the function engine and any running function. | O(1)
geoadd | Add places by longitude and latitude to a geospatial index. | O(log(N)) per place.
geodist | Distance between two places of a geospatial index. | O(1)
geohash | Geohash strings of places. | O(1) per place.
geopos | Longitude and latitude of places. | O(1) per place.
georadius | Places within a radius of a point. | O(N+log(M)), N = places in the covering area, M = index size.
georadius_ro | Read-only GEORADIUS. | O(N+log(M)), N = places in the covering area, M = index size.
georadiusbymember | Places within a radius of another place. | O(N+log(M)), N = places in the covering area, M = index size.
georadiusbymember_ro | Read-only GEORADIUSBYMEMBER. | O(N+log(M)), N = places in the covering area, M = index size.
geosearch | Places inside a circle or box. | O(N+log(M)), N = places in the covering area, M = index size.
geosearchstore | Places inside a circle or box, stored into a key. | O(N+log(M)), N = places in the covering area, M = index size.
get | The string value of a key. | O(1)
getbit | One bit of a string. | O(1)
getdel | Read a string and delete its key. | O(1)
getex | Read a string and change its expiry. | O(1)
getrange | A slice of a string. | O(N), N = bytes returned.
getset | Store a string and return the previous one. | O(1)
hdel | Remove fields from a hash. | O(N), N = fields.
hello | Choose the protocol version, optionally authenticating and naming the connection. | O(1)
hexists | Whether a hash has a field. | O(1)
hget | A field's value in a hash. | O(1)
hgetall | Every field and value of a hash. | O(N), N = hash size.
hincrby | Add an integer to a hash field. | O(1)
hincrbyfloat | Add a floating point number to a hash field. | O(1)
hkeys | Every field name of a hash. | O(N), N = hash size.
hlen | Number of fields in a hash. | O(1)
hmget | Several field values of a hash. | O(N), N = fields asked.
hmset | Set several hash fields (older form of HSET). | O(N), N = fields.
hrandfield | Random fields of a hash. | O(N), N = fields returned.
hscan | Walk the fields of a hash a batch at a time. | O(1) per call; O(N) for a full walk.
hset | Set hash fields. | O(1) per field.
hsetnx | Set a hash field only if it is absent. | O(1)
hstrlen | Length of a hash field's value. | O(1)
hvals | Every value of a hash. | O(N), N = hash size.
incr | Add one to an integer string. | O(1)
incrby | Add an integer to an integer string. | O(1)
incrbyfloat | Add a floating point number to a numeric string. | O(1)
info | Server information and statistics. | O(1)
keys | Key names matching a glob pattern. | O(N), N = keys in the database.
lastsave | Unix time of the last successful save to disk. | O(1)
latency | The latency monitor. | Depends on the subcommand.
latency|doctor | A readable analysis of recorded latency. | O(1)
latency|graph | An ASCII chart of one event's latency. | O(1)
latency|help | Explain the LATENCY subcommands. | O(1)
latency|histogram | Per-command latency distributions. | O(N), N = commands shown.
latency|history | Latency samples of one event. | O(1)
latency|latest | Newest latency sample of every event. | O(1)
latency|reset | Forget latency samples. | O(1)
lcs | Longest common subsequence of two strings. | O(N*M), N and M = lengths of the strings.
lindex | The element at a position of a list. | O(N), N = elements walked.
linsert | Insert an element before or after another in a list. | O(N), N = elements walked.
llen | Length of a list. | O(1)
lmove | Pop from one list end and push onto another list. | O(1)
lmpop | Pop elements from the first non-empty list. | O(N+M), N = keys, M = elements popped.
lolwut | Computer art and the server version. | -
lpop | Remove and return elements from the head of a list. | O(N), N = elements popped.
lpos | Positions of matching elements in a list. | O(N), N = list length.
lpush | Add elements at the head of a list. | O(1) per element.
lpushx | LPUSH only onto an existing list. | O(1) per element.
lrange | A range of list elements. | O(S+N), S = offset of the start, N = elements returned.
lrem | Remove elements equal to a value. | O(N+M), N = list length, M = removed.
lset | Replace the element at a position. | O(N), N = elements walked.
ltrim | Keep only a range of a list. | O(N), N = elements removed.
memory | Memory usage reports. | Depends on the subcommand.
memory|doctor | A readable analysis of memory usage. | O(1)
memory|help | Explain the MEMORY subcommands. | O(1)
memory|malloc-stats | The allocator's own statistics. | Depends on the allocator.
memory|purge | Ask the allocator to return free memory. | Depends on the allocator.
memory|stats | Detailed memory usage figures. | O(1)
memory|usage | Bytes used by a key and its value. | O(N), N = elements sampled.
mget | Values of several keys. | O(N), N = keys.
migrate | Move keys to another server, atomically. | Depends on the data moved.
module | Loadable modules. | Depends on the subcommand.
module|help | Explain the MODULE subcommands. | O(1)
module|list | The loaded modules. | O(N), N = modules.
module|load | Load a module. | O(1)
module|loadex | Load a module with configuration and arguments. | O(1)
module|unload | Unload a module. | O(1)
monitor | Stream every command the server runs. | -
move | Move a key to another database. | O(1)
mset | Set several keys. | O(N), N = keys.
msetnx | Set several keys only if none of them exists. | O(N), N = keys.
multi | Start queueing commands for EXEC. | O(1)
object | Internal details of stored values. | Depends on the subcommand.
object|encoding | The internal representation of a key's value. | O(1)
object|freq | The LFU access counter of a key. | O(1)
object|help | Explain the OBJECT subcommands. | O(1)
object|idletime | Seconds since a key was last accessed. | O(1)
object|refcount | How many references hold a key's value. | O(1)
persist | Remove a key's expiry. | O(1)
pexpire | Give a key a time to live in milliseconds. | O(1)
pexpireat | Make a key expire at a Unix time in milliseconds. | O(1)
pexpiretime | The Unix time in milliseconds at which a key expires. | O(1)
pfadd | Add elements to a HyperLogLog. | O(1) per element.
pfcount | Estimated number of distinct elements in HyperLogLogs. | O(1) for one key, O(N) to merge N keys.
pfdebug | HyperLogLog internals (testing). | O(N)
pfmerge | Merge HyperLogLogs into one. | O(N), N = HyperLogLogs.
pfselftest | HyperLogLog self-test. | O(N)
ping | Check that the server answers. | O(1)
psetex | Set a string with a time to live in milliseconds. | O(1)
psubscribe | Receive messages from channels matching patterns. | O(N), N = patterns.
psync | Replication handshake of a replica. | -
pttl | Remaining time to live of a key in milliseconds. | O(1)
publish | Send a message to a channel. | O(N+M), N = subscribers, M = patterns.
pubsub | Pub/sub introspection. | Depends on the subcommand.
pubsub|channels | Channels with subscribers. | O(N), N = channels.
pubsub|help | Explain the PUBSUB subcommands. | O(1)
pubsub|numpat | Number of subscribed patterns. | O(1)
pubsub|numsub | Subscriber counts of channels. | O(N), N = channels asked.
pubsub|shardchannels | Shard channels with subscribers. | O(N), N = shard channels.
pubsub|shardnumsub | Subscriber counts of shard channels. | O(N), N = shard channels asked.
punsubscribe | Stop receiving messages for patterns. | O(N+M), N = patterns of the client, M = all patterns.
quit | Close the connection. | O(1)
randomkey | A random key name. | O(1)
readonly | Cluster: allow reads from this replica. | O(1)
readwrite | Cluster: stop reads from this replica. | O(1)
rename | Give a key a new name. | O(1)
renamenx | Rename a key only if the new name is free. | O(1)
replconf | Replication settings of a replica (internal). | O(1)
replicaof | Replicate another server, or stop replicating. | O(1)
reset | Return the connection to its initial state. | O(1)
restore | Create a key from a DUMP payload. | O(1) to create, O(N*M) to deserialise.
restore-asking | RESTORE during cluster migration (internal). | O(1) to create, O(N*M) to deserialise.
role | This server's replication role. | O(1)
rpop | Remove and return elements from the tail of a list. | O(N), N = elements popped.
rpoplpush | Pop from a list's tail and push onto another list's head. | O(1)
rpush | Add elements at the tail of a list. | O(1) per element.
rpushx | RPUSH only onto an existing list. | O(1) per element.
sadd | Add members to a set. | O(1) per member.
save | Write a snapshot of the dataset now, blocking. | O(N), N = keys.
scan | Walk the key space a batch at a time. | O(1) per call; O(N) for a full walk.
scard | Number of members of a set. | O(1)
script | The Lua script cache. | Depends on the subcommand.
script|debug | Debug mode for the next EVAL. | O(1)
script|exists | Whether scripts are cached. | O(N), N = SHA1s.
script|flush | Empty the script cache. | O(N), N = scripts.
script|help | Explain the SCRIPT subcommands. | O(1)
script|kill | Stop the script running now. | O(1)
script|load | Cache a script without running it. | O(N), N = bytes of the script.
sdiff | Members of the first set not in the others. | O(N), N = members of all sets.
sdiffstore | SDIFF stored into a key. | O(N), N = members of all sets.
select | Choose the database of this connection. | O(1)
set | Store a string, with options for expiry and conditions. | O(1)
setbit | Set or clear one bit of a string. | O(1)
setex | Set a string with a time to live in seconds. | O(1)
setnx | Set a string only if the key is absent. | O(1)
setrange | Overwrite part of a string. | O(1), plus copying when the string grows.
shutdown | Save if asked and stop the server. | O(N) when saving, N = keys.
sinter | Members common to all sets. | O(N*M), N = smallest set, M = sets.
sintercard | Size of the intersection of sets. | O(N*M), N = smallest set, M = sets.
sinterstore | SINTER stored into a key. | O(N*M), N = smallest set, M = sets.
sismember | Whether a value is in a set. | O(1)
slaveof | Older name of REPLICAOF. | O(1)
slowlog | The slow query log. | Depends on the subcommand.
slowlog|get | Newest entries of the slow log. | O(N), N = entries.
slowlog|help | Explain the SLOWLOG subcommands. | O(1)
slowlog|len | Number of slow log entries. | O(1)
slowlog|reset | Empty the slow log. | O(N), N = entries.
smembers | Every member of a set. | O(N), N = set size.
smismember | Whether each of several values is in a set. | O(N), N = values.
smove | Move a member from one set to another. | O(1)
sort | Sort a list, set or sorted set, optionally storing the result. | O(N+M*log(M)), N = elements, M = returned.
sort_ro | Read-only SORT. | O(N+M*log(M)), N = elements, M = returned.
spop | Remove and return random members of a set. | O(N), N = members popped.
spublish | Send a message to a shard channel. | O(N), N = subscribers.
srandmember | Random members of a set. | O(N), N = members returned.
srem | Remove members from a set. | O(N), N = members removed.
sscan | Walk a set a batch at a time. | O(1) per call; O(N) for a full walk.
ssubscribe | Receive messages from shard channels. | O(N), N = shard channels.
strlen | Length of a string. | O(1)
subscribe | Receive messages from channels. | O(N), N = channels.
substr | A slice of a string (older GETRANGE). | O(N), N = bytes returned.
sunion | Members of any of the sets. | O(N), N = members of all sets.
sunionstore | SUNION stored into a key. | O(N), N = members of all sets.
sunsubscribe | Stop receiving messages from shard channels. | O(N), N = shard channels.
swapdb | Exchange the contents of two databases. | O(N), N = clients watching or waiting on the databases.
sync | Full resynchronisation of a replica (internal). | -
time | The server's clock. | O(1)
touch | Update the access time of keys; count those that exist. | O(N), N = keys.
ttl | Remaining time to live of a key in seconds. | O(1)
type | The type of a key's value. | O(1)
unlink | Remove keys, freeing big values in the background. | O(1) per key, plus O(N) for small collections.
unsubscribe | Stop receiving messages from channels. | O(N), N = channels.
unwatch | Forget every WATCHed key. | O(1)
wait | Wait for replicas to acknowledge earlier writes. | O(1)
watch | Make the next EXEC fail if these keys change. | O(1) per key.
xack | Acknowledge stream entries of a consumer group. | O(1) per entry.
xadd | Append an entry to a stream. | O(1), plus O(N) for evicted entries when trimming.
xautoclaim | Take over idle pending entries, scanning from an id. | O(1) when COUNT is small.
xclaim | Take over pending entries of other consumers. | O(log N), N = pending entries of the group.
xdel | Remove entries from a stream. | O(1) per entry.
xgroup | Stream consumer groups. | Depends on the subcommand.
xgroup|create | Create a consumer group. | O(1)
xgroup|createconsumer | Create a consumer in a group. | O(1)
xgroup|delconsumer | Remove a consumer from a group. | O(1)
xgroup|destroy | Remove a consumer group. | O(N), N = pending entries of the group.
xgroup|help | Explain the XGROUP subcommands. | O(1)
xgroup|setid | Move a group's last-delivered id. | O(1)
xinfo | Stream introspection. | Depends on the subcommand.
xinfo|consumers | The consumers of a group. | O(1)
xinfo|groups | The groups of a stream. | O(1)
xinfo|help | Explain the XINFO subcommands. | O(1)
xinfo|stream | Details about a stream. | O(1), or O(N) with FULL.
xlen | Number of entries in a stream. | O(1)
xpending | Pending entries of a consumer group. | O(N), N = entries returned.
xrange | Stream entries in an id range. | O(N), N = entries returned.
xread | Read entries from streams, optionally waiting. | O(N), N = entries returned.
xreadgroup | Read entries as a group consumer, optionally waiting. | O(M), M = entries returned.
xrevrange | Stream entries in an id range, newest first. | O(N), N = entries returned.
xsetid | Set a stream's last id (internal). | O(1)
xtrim | Shorten a stream. | O(N), N = entries removed.
zadd | Add members to a sorted set or change their scores. | O(log(N)) per member.
zcard | Number of members of a sorted set. | O(1)
zcount | Members with scores in a range. | O(log(N))
zdiff | Members of the first sorted set not in the others. | O(L + (N-K)log(N)), L = all members, N = size of the first, K = result size.
zdiffstore | ZDIFF stored into a key. | O(L + (N-K)log(N)), L = all members, N = size of the first, K = result size.
zincrby | Add to a member's score. | O(log(N))
zinter | Members common to all sorted sets, with combined scores. | O(N*K)+O(M*log(M)), N = smallest set, K = sets, M = result size.
zintercard | Size of the intersection of sorted sets. | O(N*K), N = smallest set, K = sets.
zinterstore | ZINTER stored into a key. | O(N*K)+O(M*log(M)), N = smallest set, K = sets, M = result size.
zlexcount | Members in a lexicographic range. | O(log(N))
zmpop | Pop members from the first non-empty sorted set. | O(K) + O(M*log(N)), K = keys, M = members popped.
zmscore | Scores of several members. | O(N), N = members asked.
zpopmax | Remove and return the highest-scored members. | O(log(N)*M), M = members popped.
zpopmin | Remove and return the lowest-scored members. | O(log(N)*M), M = members popped.
zrandmember | Random members of a sorted set. | O(N), N = members returned.
zrange | Members in a range of ranks, scores or names. | O(log(N)+M), M = members returned.
zrangebylex | Members in a lexicographic range. | O(log(N)+M), M = members returned.
zrangebyscore | Members in a score range. | O(log(N)+M), M = members returned.
zrangestore | ZRANGE stored into a key. | O(log(N)+M), M = members stored.
zrank | Rank of a member, lowest score first. | O(log(N))
zrem | Remove members from a sorted set. | O(M*log(N)), M = members removed.
zremrangebylex | Remove members in a lexicographic range. | O(log(N)+M), M = members removed.
zremrangebyrank | Remove members in a range of ranks. | O(log(N)+M), M = members removed.
zremrangebyscore | Remove members in a score range. | O(log(N)+M), M = members removed.
zrevrange | Members in a range of ranks, highest score first. | O(log(N)+M), M = members returned.
zrevrangebylex | Members in a lexicographic range, in reverse. | O(log(N)+M), M = members returned.
zrevrangebyscore | Members in a score range, highest first. | O(log(N)+M), M = members returned.
zrevrank | Rank of a member, highest score first. | O(log(N))
zscan | Walk a sorted set a batch at a time. | O(1) per call; O(N) for a full walk.
zscore | Score of a member. | O(1)
zunion | Members of any of the sorted sets, with combined scores. | O(N)+O(M*log(M)), N = all members, M = result size.
zunionstore | ZUNION stored into a key. | O(N)+O(M*log(M)), N = all members, M = result size.
client|no-touch | Keep this connection's reads from changing keys' access times. | O(1)
client|setinfo | Record the client library's name or version for CLIENT LIST. | O(1)
"""

# name | version | what changed then
_HISTORY = """
acl|getuser | 6.2.0 | Key and channel patterns shown as permission strings.
acl|getuser | 7.0.0 | Selectors added to the reply.
acl|setuser | 6.2.0 | Pub/sub channel rules.
acl|setuser | 7.0.0 | Selectors and key permissions.
auth | 6.0.0 | A user name may be given.
bgsave | 3.2.2 | SCHEDULE option.
bitcount | 7.0.0 | BYTE and BIT units.
bitpos | 7.0.0 | BYTE and BIT units.
blpop | 6.0.0 | Fractional timeouts.
brpop | 6.0.0 | Fractional timeouts.
brpoplpush | 6.0.0 | Fractional timeouts.
bzpopmax | 6.0.0 | Fractional timeouts.
bzpopmin | 6.0.0 | Fractional timeouts.
client|kill | 2.8.12 | Filter form (ID, TYPE, ADDR, SKIPME).
client|kill | 2.8.12 | ID filter.
client|kill | 3.2.0 | MASTER type; SLAVE kept as an alias of REPLICA.
client|kill | 5.0.0 | REPLICA type.
client|kill | 6.2.0 | LADDR filter.
client|list | 2.8.12 | id field.
client|list | 5.0.0 | TYPE filter.
client|list | 6.0.0 | user field.
client|list | 6.2.0 | ID filter and laddr field.
client|list | 7.0.0 | ssub field.
client|list | 7.0.3 | Memory fields of the reply buffer.
client|pause | 6.2.0 | WRITE and ALL modes.
cluster|meet | 4.0.0 | Cluster bus port argument.
cluster|slots | 4.0.0 | Node ids in the reply.
cluster|slots | 7.0.0 | Host names and extra metadata in the reply.
command|info | 7.0.0 | Every command is described when no name is given.
config|get | 7.0.0 | Several parameters per call.
config|set | 7.0.0 | Several parameters per call.
exists | 3.0.3 | Several keys per call.
expire | 7.0.0 | NX, XX, GT and LT conditions.
expireat | 7.0.0 | NX, XX, GT and LT conditions.
flushall | 4.0.0 | ASYNC mode.
flushall | 6.2.0 | SYNC mode.
flushdb | 4.0.0 | ASYNC mode.
flushdb | 6.2.0 | SYNC mode.
geoadd | 6.2.0 | CH, NX and XX options.
georadius | 6.2.0 | ANY with COUNT.
georadius | 7.0.0 | Uppercase and lowercase units.
georadius_ro | 6.2.0 | ANY with COUNT.
georadiusbymember | 7.0.0 | Uppercase and lowercase units.
geosearch | 7.0.0 | Uppercase and lowercase units.
geosearchstore | 7.0.0 | Uppercase and lowercase units.
hdel | 2.4.0 | Several fields per call.
hello | 6.2.0 | The protocol version became optional.
hset | 4.0.0 | Several field/value pairs per call.
info | 7.0.0 | Several sections per call.
lpop | 6.2.0 | COUNT argument.
lpush | 2.4.0 | Several elements per call.
lpushx | 4.0.0 | Several elements per call.
migrate | 3.0.0 | COPY and REPLACE options.
migrate | 3.0.6 | KEYS option for several keys.
migrate | 4.0.7 | AUTH option.
migrate | 6.0.0 | AUTH2 option.
pexpire | 7.0.0 | NX, XX, GT and LT conditions.
pexpireat | 7.0.0 | NX, XX, GT and LT conditions.
pttl | 2.8.0 | -2 for a missing key, -1 for no expiry.
renamenx | 3.2.0 | No error when source and destination are the same.
restore | 3.0.0 | REPLACE option.
restore | 5.0.0 | ABSTTL option.
restore | 5.0.0 | IDLETIME and FREQ options.
restore-asking | 3.0.0 | REPLACE option.
restore-asking | 5.0.0 | ABSTTL option.
restore-asking | 5.0.0 | IDLETIME and FREQ options.
rpop | 6.2.0 | COUNT argument.
rpush | 2.4.0 | Several elements per call.
rpushx | 4.0.0 | Several elements per call.
sadd | 2.4.0 | Several members per call.
scan | 6.0.0 | TYPE filter.
script|flush | 6.2.0 | ASYNC and SYNC modes.
set | 2.6.12 | EX, PX, NX and XX options.
set | 6.0.0 | KEEPTTL option.
set | 6.2.0 | GET, EXAT and PXAT options.
set | 7.0.0 | NX and GET together.
shutdown | 7.0.0 | NOW, FORCE and ABORT options.
slowlog|get | 4.0.0 | Client address and name in each entry.
spop | 3.2.0 | COUNT argument.
srandmember | 2.6.0 | COUNT argument.
srem | 2.4.0 | Several members per call.
ttl | 2.8.0 | -2 for a missing key, -1 for no expiry.
xadd | 6.2.0 | NOMKSTREAM, MINID trimming and LIMIT.
xadd | 7.0.0 | Explicit ids of the form <ms>-*.
xautoclaim | 7.0.0 | Deleted entry ids listed in the reply; no deleted entries in the claimed list.
xgroup|create | 7.0.0 | ENTRIESREAD argument.
xgroup|setid | 7.0.0 | ENTRIESREAD argument.
xinfo|groups | 7.0.0 | entries-read and lag fields.
xinfo|stream | 6.0.0 | FULL modifier.
xinfo|stream | 7.0.0 | New fields: max-deleted-entry-id, entries-added, recorded-first-entry-id, entries-read and lag.
xpending | 6.2.0 | IDLE filter; exclusive ranges.
xrange | 6.2.0 | Exclusive ranges.
xrevrange | 6.2.0 | Exclusive ranges.
xsetid | 7.0.0 | ENTRIESADDED and MAXDELETEDID arguments.
xtrim | 6.2.0 | MINID strategy and LIMIT.
zadd | 2.4.0 | Several members per call.
zadd | 3.0.2 | XX, NX, CH and INCR options.
zadd | 6.2.0 | GT and LT options.
zrange | 6.2.0 | REV, BYSCORE, BYLEX and LIMIT.
zrangebyscore | 2.0.0 | WITHSCORES.
zrem | 2.4.0 | Several members per call.
zrevrangebyscore | 2.1.6 | WITHSCORES.
"""

# name | key spec index | why the key spec says what it says
_KEY_SPEC_NOTES = """
bitfield | 0 | Marked as an update only when the arguments include SET or INCRBY; a GET-only call just reads.
eval | 0 | The script may read or write any of these keys; the flags cannot say which.
eval_ro | 0 | A read-only script may only read these keys.
fcall | 0 | The function may read or write any of these keys; the flags cannot say which.
fcall_ro | 0 | A read-only function may only read these keys.
getex | 0 | Reads the value; it also updates the expiry unless no option is given.
pfcount | 0 | Counting can rewrite the cached cardinality, so the key counts as written.
set | 0 | Reads the old value too when GET is given.
sort | 1 | Keys named through BY and GET patterns: their names come from the data, so they are unknown here.
sort | 2 | The STORE destination: the keyword may appear anywhere, so its position is unknown here.
sort_ro | 1 | Keys named through BY and GET patterns: their names come from the data, so they are unknown here.
xadd | 0 | Appending updates the stream; the key name may also be read back (UPDATE covers both).
"""


def _rows(text: str) -> list[list[str]]:
    return [[part.strip() for part in line.split(" | ", 2)]
            for line in text.strip().splitlines() if line.strip()]


SUMMARIES: dict[str, tuple[str, str]] = {name: (summary, complexity)
                                         for name, summary, complexity in _rows(_SUMMARIES)}
HISTORY: dict[str, list[tuple[str, str]]] = {}
for _name, _version, _text in _rows(_HISTORY):
    HISTORY.setdefault(_name, []).append((_version, _text))
KEY_SPEC_NOTES: dict[tuple[str, int], str] = {
    (name, int(index)): text for name, index, text in _rows(_KEY_SPEC_NOTES)}
