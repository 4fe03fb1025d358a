package table_test

// hugePagesAligned says HugePageWords aligns its words (Linux only).
const hugePagesAligned = true
