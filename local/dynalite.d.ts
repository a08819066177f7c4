// Minimal typing for dynalite (ships none): only what local/ uses.
declare module 'dynalite' {
  import type { Server } from 'node:http';

  interface DynaliteOptions {
    /** ms a table stays CREATING (default 500); 0 makes CreateTable usable at once. */
    createTableMs?: number;
    deleteTableMs?: number;
    updateTableMs?: number;
    maxItemSizeKb?: number;
    /** LevelDB directory; in-memory when omitted. */
    path?: string;
    verbose?: boolean;
    debug?: boolean;
  }

  function dynalite(options?: DynaliteOptions): Server;
  export = dynalite;
}
