/** The version of this package, sent in every call's User-Agent. */
export const VERSION = "0.2.0-dev";
