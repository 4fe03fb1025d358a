package kafkadedup

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// checkTopics reaches the cluster and checks the topics before anything
// is read: the inputs and the output exist (a missing one is
// ErrNoTopic, never a wait), the state topic exists or is created, and
// the partition counts are noted.
func (p *Processor) checkTopics(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, p.cfg.timeout)
	defer cancel()
	if err := p.adminClient.Ping(cctx); err != nil {
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	names := append(append([]string{}, p.from...), p.to, p.cfg.stateTopic)
	details, err := p.admin.ListTopics(cctx, names...)
	if err != nil {
		return p.clusterErr("listing the topics", err)
	}
	count := func(t string) (int, error) {
		d, ok := details[t]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			return 0, fmt.Errorf("%w: %s", ErrNoTopic, t)
		case d.Err != nil:
			return 0, fmt.Errorf("kafkadedup: topic %s: %w", t, d.Err)
		}
		return len(d.Partitions), nil
	}
	p.inputCounts = map[string]int{}
	total := 0
	for _, t := range p.from {
		n, err := count(t)
		if err != nil {
			return err
		}
		p.inputCounts[t] = n
		total += n
	}
	out, err := count(p.to)
	if err != nil {
		return err
	}
	for _, t := range p.from {
		if p.inputCounts[t] != out {
			p.cfg.logf("the input %s has %d partitions and the output %s %d: a key's records go to one partition of each, but the output's partitions are not the input's (docs/kafka.md, Partitions)", t, p.inputCounts[t], p.to, out)
		}
	}
	if p.cfg.key == nil {
		p.keyPlacement = kgo.StickyKeyPartitioner(nil).ForTopic("")
	}
	state, err := count(p.cfg.stateTopic)
	switch {
	case errors.Is(err, ErrNoTopic):
		if err := p.createStateTopic(cctx, total); err != nil {
			return err
		}
		state = total
	case err != nil:
		return err
	default:
		if err := p.checkStateConfig(cctx); err != nil {
			return err
		}
	}
	p.statePartitions = int32(state)
	return nil
}

// createStateTopic creates the state topic, compacted, with partitions
// partitions.
func (p *Processor) createStateTopic(ctx context.Context, partitions int) error {
	compact := "compact"
	_, err := p.admin.CreateTopic(ctx, int32(partitions), -1, map[string]*string{"cleanup.policy": &compact}, p.cfg.stateTopic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("kafkadedup: creating the state topic %s: %w (create it, compacted, or name another with WithStateTopic)", p.cfg.stateTopic, err)
	}
	p.cfg.logf("created the state topic %s: %d partitions, compacted", p.cfg.stateTopic, partitions)
	return p.checkStateConfig(ctx)
}

// checkStateConfig reads the state topic's configuration: its cleanup
// policy (without compaction, every snapshot stays until retention
// removes it: a note, not an error) and its largest message.
func (p *Processor) checkStateConfig(ctx context.Context) error {
	rcs, err := p.admin.DescribeTopicConfigs(ctx, p.cfg.stateTopic)
	if err != nil {
		return p.clusterErr("reading the state topic's configuration", err)
	}
	rc, err := rcs.On(p.cfg.stateTopic, nil)
	if err != nil || rc.Err != nil {
		return p.clusterErr("reading the state topic's configuration", errors.Join(err, rc.Err))
	}
	for _, c := range rc.Configs {
		switch c.Key {
		case "cleanup.policy":
			if !strings.Contains(c.MaybeValue(), "compact") {
				p.cfg.logf("the state topic %s is not compacted (cleanup.policy=%s): every snapshot stays until retention removes it; a retention shorter than the snapshot interval loses state", p.cfg.stateTopic, c.MaybeValue())
			}
		case "max.message.bytes":
			if n, err := strconv.Atoi(c.MaybeValue()); err == nil && n > 0 {
				p.stateMaxMessage = n
			}
		}
	}
	return nil
}

// setChunkPayload sizes the snapshot chunks: each record of the state
// topic fits the topic's largest message and the client's largest batch,
// with room for the batch's and the record's headers and the chunk's key.
func (p *Processor) setChunkPayload() {
	limit := int(p.sess.Client().OptValue(kgo.ProducerBatchMaxBytes).(int32))
	if p.stateMaxMessage > 0 {
		limit = min(limit, p.stateMaxMessage)
	}
	overhead := 512 + chunkHeaderSize + len(chunkKey(p.group, strings.Repeat("x", 255), 1<<31-1, 1<<31-1))
	p.chunkPayload = max(limit-overhead, 1024)
}

// statePartition is the state topic's partition that holds the snapshots
// of an input partition.
func (p *Processor) statePartition(tp topicPartition) int32 {
	h := fnv.New32a()
	h.Write([]byte(tp.topic))
	return int32((uint64(h.Sum32()) + uint64(tp.part)) % uint64(p.statePartitions))
}
