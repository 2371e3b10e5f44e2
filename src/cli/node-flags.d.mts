export declare const WORKER_HEAP_MB: number;
export declare const SEMI_SPACE_MB: number;
export declare const API_SEMI_SPACE_MB: number;
export declare function nodeFlagsFor(kind: string, env?: Record<string, string | undefined>): string[];
