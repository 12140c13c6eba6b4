/** Kept in step with package.json by hand (a test compares them). */
export const VERSION = "0.1.0";
