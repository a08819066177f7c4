// The types of node-flags.js (plain JavaScript: the shim may run on a Node without type stripping).
export declare const LONG_COMMAND_NODE_FLAGS: readonly string[];
