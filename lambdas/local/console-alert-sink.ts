import { appendFile } from 'node:fs/promises';
import type { AlertSink } from '../domain/ports';
import type { Alert } from '../domain/types';

/**
 * Local-mode alert sink: prints each alert's subject to the console (via `write`), followed for a
 * firing alert by an indented `fix:` line with its remedy, and appends one JSON object per line to
 * `alerts.jsonl`: `rule`, `severity`, `action`, `status`, `instance_id`, `instance_type`,
 * `gpu_index`, `pci_bus_id`, `id`, `at`, `subject`, `summary`, `remedy`, `evidence`.
 */
export class ConsoleAlertSink implements AlertSink {
  /** Alerts published so far, in order. */
  readonly published: Alert[] = [];

  /**
   * @param jsonlPath - file to append to (created if missing)
   * @param write - console writer @default process.stdout.write
   */
  constructor(
    private readonly jsonlPath: string,
    private readonly write: (line: string) => void = (line) => process.stdout.write(line),
  ) {}

  async publish(alert: Alert): Promise<void> {
    this.published.push(alert);
    const f = alert.finding;
    const status = alert.status ?? 'firing';
    this.write(`${alert.subject}\n${status === 'firing' ? `    fix: ${f.remedy}\n` : ''}`);
    const record = {
      id: alert.id,
      rule: f.rule,
      severity: f.severity,
      action: f.action,
      status,
      instance_id: f.instance_id,
      instance_type: f.instance_type,
      gpu_index: f.gpu_index ?? null,
      pci_bus_id: f.pci_bus_id ?? null,
      at: f.at,
      subject: alert.subject,
      summary: f.summary,
      remedy: f.remedy,
      evidence: f.evidence,
    };
    await appendFile(this.jsonlPath, `${JSON.stringify(record)}\n`);
  }
}
