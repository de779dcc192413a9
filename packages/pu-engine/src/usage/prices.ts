/**
 * What tokens cost: the project's `prices` from config first (USD per million tokens), then
 * the offline table of `@pydantic/genai-prices` (the package's bundled data; pu never asks it
 * to fetch newer prices). A model neither knows has no price: its cost is unknown (`null`),
 * never 0. Tokens are summed per model and day before they are priced, so the table's base
 * rates apply (its long-context tiers are per request and cannot be told apart in a sum).
 */
import type { calcPrice as CalcPrice } from "@pydantic/genai-prices";
import type { ModelPrice } from "@pu/core/config";
import type { TokenCounts } from "@pu/core/usage";

const PER_MILLION = 1_000_000;

type Rates = Required<ModelPrice>;

function baseRate(value: unknown): number | undefined {
  if (typeof value === "number") return value;
  if (value !== null && typeof value === "object" && typeof (value as { base?: unknown }).base === "number") return (value as { base: number }).base;
  return undefined;
}

// The table is ≈ 0.8 MB of code: loaded after the daemon is up, not on its way to listening.
let calcPrice: typeof CalcPrice | undefined;
let loading: Promise<void> | undefined;

/** Loads the price table once; PriceBooks made before it is in price only from config. */
export function loadPriceTable(): Promise<void> {
  loading ??= import("@pydantic/genai-prices").then((table) => {
    calcPrice = table.calcPrice;
  });
  return loading;
}

/** The table's rates for a model, or null when it does not know the model. */
function tableRates(model: string): Rates | null {
  if (!calcPrice) return null;
  let found: ReturnType<typeof CalcPrice> = null;
  try {
    found = calcPrice({ input_tokens: 1, output_tokens: 1 }, model);
  } catch {
    found = null;
  }
  if (!found) return null;
  const price = found.model_price;
  const input = baseRate(price.input_mtok);
  const output = baseRate(price.output_mtok);
  if (input === undefined || output === undefined) return null;
  return { input, output, cacheRead: baseRate(price.cache_read_mtok) ?? input, cacheWrite: baseRate(price.cache_write_mtok) ?? input };
}

export class PriceBook {
  private readonly rates = new Map<string, Rates | null>();

  constructor(private readonly overrides: Readonly<Record<string, ModelPrice>> = {}) {}

  /** US dollars for these tokens of `model`, or null when the model has no price. */
  cost(model: string, t: Readonly<TokenCounts>): number | null {
    const rates = this.ratesOf(model);
    if (!rates) return null;
    return (t.input * rates.input + t.cacheRead * rates.cacheRead + t.cacheWrite * rates.cacheWrite + t.output * rates.output) / PER_MILLION;
  }

  private ratesOf(model: string): Rates | null {
    const own = this.overrides[model];
    if (own) return { input: own.input, output: own.output, cacheRead: own.cacheRead ?? own.input, cacheWrite: own.cacheWrite ?? own.input };
    let rates = this.rates.get(model);
    if (rates === undefined) {
      rates = tableRates(model);
      // Not remembered before the table is in: it may know the model.
      if (calcPrice) this.rates.set(model, rates);
    }
    return rates;
  }
}
