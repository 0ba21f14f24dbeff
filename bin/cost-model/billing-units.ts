/** Hours in a month as AWS bills them (730 h = 8,760 h / 12). */
export const HOURS_PER_MONTH = 730;
