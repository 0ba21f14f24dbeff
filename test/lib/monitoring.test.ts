import type { CfnResource } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GpuSentinelStack } from '../../lib/gpu-sentinel-stack';
import { PropsValidationError } from '../../lib/props-validation-error';
import { buildStack } from './build-stack';

interface AlarmProperties {
  readonly Namespace?: string;
  readonly MetricName?: string;
  readonly Dimensions?: { Name: string; Value: unknown }[];
  readonly Statistic?: string;
  readonly Period?: number;
  readonly Threshold: number;
  readonly ComparisonOperator: string;
  readonly EvaluationPeriods: number;
  readonly DatapointsToAlarm?: number;
  readonly TreatMissingData: string;
  readonly AlarmActions: unknown[];
  readonly OKActions: unknown[];
}

/** The stack's alarms by construct id under `MonitoringAlarms`. */
function alarmsOf(stack: GpuSentinelStack): Map<string, AlarmProperties> {
  const template = Template.fromStack(stack).toJSON() as {
    Resources: Record<string, { Type: string; Properties: AlarmProperties }>;
  };
  const out = new Map<string, AlarmProperties>();
  for (const alarm of stack.alarms.alarms) {
    const id = stack.getLogicalId(alarm.node.defaultChild as CfnResource);
    const resource = template.Resources[id];
    if (resource !== undefined) out.set(alarm.node.id, resource.Properties);
  }
  return out;
}

function ref(stack: GpuSentinelStack, construct: { node: { defaultChild?: unknown } }): { Ref: string } {
  return { Ref: stack.getLogicalId(construct.node.defaultChild as CfnResource) };
}

/**
 * The dashboard body as JSON, CloudFormation references written as `<Ref:Id>` / `<GetAtt:Id.Attr>`
 * (they only ever sit inside JSON strings of the body).
 */
function dashboardBody(stack: GpuSentinelStack): {
  widgets: { type: string; properties: Record<string, unknown> }[];
} {
  const template = Template.fromStack(stack);
  const [dashboard] = Object.values(template.findResources('AWS::CloudWatch::Dashboard')) as {
    Properties: { DashboardBody: { 'Fn::Join': [string, unknown[]] } };
  }[];
  const parts = dashboard?.Properties.DashboardBody['Fn::Join'][1] ?? [];
  const text = parts
    .map((p) => {
      if (typeof p === 'string') return p;
      const r = p as { Ref?: string; 'Fn::GetAtt'?: string[] };
      return r.Ref !== undefined ? `<Ref:${r.Ref}>` : `<GetAtt:${(r['Fn::GetAtt'] ?? []).join('.')}>`;
    })
    .join('');
  return JSON.parse(text);
}

describe.each(['athena', 'timestream'] as const)('monitoring, store %s', (store) => {
  let stack: GpuSentinelStack;
  let alarms: Map<string, AlarmProperties>;
  let critical: { Ref: string };
  let warning: { Ref: string };

  beforeAll(() => {
    stack = buildStack({ store });
    alarms = alarmsOf(stack);
    critical = ref(stack, stack.topics.critical);
    warning = ref(stack, stack.topics.warning);
  });

  it('has an errors and a throttles alarm for every function of the stack', () => {
    // Prepare
    const functions = ['Ingest', 'Report', 'FleetEvaluator'];
    // Act
    const ids = [...alarms.keys()].sort();
    // Assess
    expect(ids).toEqual(
      [
        'FleetWasteRate',
        'Ingest5xx',
        'SilentAgents',
        'FleetEvaluatorNotRunning',
        ...functions.flatMap((f) => [`${f}Errors`, `${f}Throttles`]),
      ].sort(),
    );
  });

  it('pages on ingest 5xx above 5 % of requests in 2 of 3 periods, ignoring periods without requests', () => {
    // Act
    const alarm = alarms.get('Ingest5xx');
    // Assess
    expect(alarm).toMatchObject({
      Namespace: 'AWS/ApiGateway',
      MetricName: '5XXError',
      Dimensions: [{ Name: 'ApiName', Value: stack.api.api.restApiName }],
      Statistic: 'Average',
      Period: 300,
      Threshold: 0.05,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
      TreatMissingData: 'notBreaching',
      AlarmActions: [critical],
      OKActions: [critical],
    });
  });

  it.each([
    ['IngestErrors', 'Errors', 'critical'],
    ['IngestThrottles', 'Throttles', 'warning'],
  ] as const)('alarms %s on the ingest function’s %s (Sum ≥ 1 in 5 min) to %s', (id, metric, topic) => {
    // Act
    const alarm = alarms.get(id);
    // Assess
    expect(alarm).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: metric,
      Dimensions: [{ Name: 'FunctionName', Value: ref(stack, stack.ingest.function) }],
      Statistic: 'Sum',
      Period: 300,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      EvaluationPeriods: 1,
      TreatMissingData: 'notBreaching',
      AlarmActions: [topic === 'critical' ? critical : warning],
    });
  });

  it('pages on silent agents > 0 in 2 of 3 periods of 5 min, not on missing data (after deploy, a late run)', () => {
    // Act
    const alarm = alarms.get('SilentAgents');
    // Assess
    expect(alarm).toMatchObject({
      Namespace: 'GpuSentinel',
      MetricName: 'SilentAgents',
      Statistic: 'Maximum',
      Period: 300,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
      TreatMissingData: 'notBreaching',
      AlarmActions: [critical],
      OKActions: [critical],
    });
    expect(alarm?.Dimensions).toBeUndefined();
  });

  it('pages on the fleet evaluator’s errors and warns when it was not invoked for 15 min', () => {
    // Act
    const errors = alarms.get('FleetEvaluatorErrors');
    const notRunning = alarms.get('FleetEvaluatorNotRunning');
    // Assess
    const dimensions = [{ Name: 'FunctionName', Value: ref(stack, stack.fleet.function) }];
    expect(errors).toMatchObject({ MetricName: 'Errors', Dimensions: dimensions, AlarmActions: [critical] });
    expect(notRunning).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Invocations',
      Dimensions: dimensions,
      Statistic: 'Sum',
      Period: 300,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
      TreatMissingData: 'breaching',
      AlarmActions: [warning],
      OKActions: [warning],
    });
  });

  it('treats missing data as breaching in the not-running alarm only', () => {
    // Act
    const breaching = [...alarms].filter(([, a]) => a.TreatMissingData === 'breaching').map(([id]) => id);
    // Assess
    expect(breaching).toEqual(['FleetEvaluatorNotRunning']);
  });

  it('warns on a fleet waste rate above 50 % for half an hour', () => {
    // Act
    const alarm = alarms.get('FleetWasteRate');
    // Assess
    expect(alarm).toMatchObject({
      Namespace: 'GpuSentinel',
      MetricName: 'FleetWasteRate',
      Statistic: 'Average',
      Period: 300,
      Threshold: 50,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 6,
      DatapointsToAlarm: 6,
      TreatMissingData: 'notBreaching',
      AlarmActions: [warning],
      OKActions: [warning],
    });
  });

  it('lays the dashboard out by failure mode', () => {
    // Act
    const body = dashboardBody(stack);
    // Assess
    const headers = body.widgets
      .filter((w) => w.type === 'text')
      .map((w) => String(w.properties.markdown).split('\n')[0]);
    expect(headers).toEqual([
      '## Health',
      '## Throughput and utilization',
      '## Bottlenecks',
      '## Waste dollars',
      '## Pipeline',
    ]);
    const titles = body.widgets.filter((w) => w.type !== 'text').map((w) => w.properties.title);
    expect(titles).toEqual([
      'XID events',
      'Alerts by severity',
      'Silent agents and stragglers',
      'Alarms',
      'SM active vs SM occupancy (mean per GPU)',
      'Tensor active and efficiency (mean per GPU)',
      'Batches and flush windows ingested',
      'PCIe RX vs DRAM active (mean per GPU)',
      'Now: wasted USD/h, fleet waste rate, unmonitored USD/h, silent agents',
      'Wasted USD/h, fleet',
      'Wasted USD/h by team',
      'Fleet waste rate and unmonitored USD/h',
      'API requests, 4xx, 5xx',
      'API latency',
      'Refused batches by status class',
      'Agent lag (window end → arrival)',
      'Lambda errors and throttles',
      'Lambda duration p99',
      ...(store === 'athena' ? ['Firehose delivery to S3'] : []),
    ]);
  });

  it('graphs the named metrics of each widget', () => {
    // Prepare
    const body = dashboardBody(stack);
    const widget = (title: string) => body.widgets.find((w) => w.properties.title === title)?.properties;
    // Act / Assess
    expect(widget('SM active vs SM occupancy (mean per GPU)')).toMatchObject({
      period: 300,
      metrics: [
        ['GpuSentinel', 'SmActive', { label: 'SM active %' }],
        ['GpuSentinel', 'SmOccupancy', { label: 'SM occupancy %' }],
      ],
      yAxis: { left: { min: 0, max: 100 } },
    });
    expect(widget('Tensor active and efficiency (mean per GPU)')?.metrics).toEqual([
      ['GpuSentinel', 'TensorActive', { label: 'tensor active %' }],
      ['GpuSentinel', 'Efficiency', { label: 'efficiency %' }],
    ]);
    expect(widget('PCIe RX vs DRAM active (mean per GPU)')?.metrics).toEqual([
      ['GpuSentinel', 'PcieRxBytesPerSecond', { label: 'PCIe RX bytes/s' }],
      ['GpuSentinel', 'DramActive', { label: 'DRAM active %', yAxis: 'right' }],
    ]);
    expect(widget('XID events')?.metrics).toEqual([
      ['GpuSentinel', 'XidEvents', { label: 'XID events', stat: 'Sum' }],
    ]);
    expect(widget('Silent agents and stragglers')?.metrics).toEqual([
      ['GpuSentinel', 'SilentAgents', { label: 'silent agents', stat: 'Maximum' }],
      ['GpuSentinel', 'Stragglers', { label: 'straggler nodes', stat: 'Maximum' }],
    ]);
    expect(widget('Wasted USD/h, fleet')?.metrics).toEqual([
      [{ expression: '3600 * wasted / PERIOD(wasted)', label: 'wasted USD/h (ingest)' }],
      ['GpuSentinel', 'WastedUsd', { stat: 'Sum', visible: false, id: 'wasted', label: 'wasted USD' }],
      ['GpuSentinel', 'FleetWastedUsdPerHour', { label: 'wasted USD/h (fleet evaluator)' }],
    ]);
    expect(widget('Wasted USD/h by team')?.metrics).toEqual([
      [
        {
          expression: `12 * SEARCH('{GpuSentinel,Team} MetricName="WastedUsd"', 'Sum', 300)`,
          label: `\${PROP('Dim.Team')}`,
        },
      ],
    ]);
    expect(widget('Fleet waste rate and unmonitored USD/h')?.metrics).toEqual([
      ['GpuSentinel', 'FleetWasteRate', { label: 'fleet waste rate %' }],
      ['GpuSentinel', 'UnmonitoredUsdPerHour', { label: 'unmonitored USD/h', yAxis: 'right' }],
    ]);
    expect(widget('Alerts by severity')?.metrics).toEqual(
      ['critical', 'warning', 'info'].map((severity) => [
        {
          expression: `SUM(SEARCH('{GpuSentinel,Severity} MetricName="Alerts" Severity="${severity}"', 'Sum', 300))`,
          label: severity,
        },
      ]),
    );
    expect(widget('Refused batches by status class')?.metrics).toEqual([
      [
        {
          expression: `SEARCH('{GpuSentinel,StatusClass} MetricName="RejectedBatches"', 'Sum', 300)`,
          label: `\${PROP('Dim.StatusClass')}`,
        },
      ],
    ]);
    const apiName = stack.api.api.restApiName;
    expect(widget('API requests, 4xx, 5xx')?.metrics).toEqual([
      ['AWS/ApiGateway', 'Count', 'ApiName', apiName, { label: 'requests', stat: 'SampleCount' }],
      ['AWS/ApiGateway', '4XXError', 'ApiName', apiName, { label: '4xx', stat: 'Sum' }],
      ['AWS/ApiGateway', '5XXError', 'ApiName', apiName, { label: '5xx', stat: 'Sum' }],
    ]);
    const ingest = `<Ref:${stack.getLogicalId(stack.ingest.function.node.defaultChild as CfnResource)}>`;
    expect(widget('Lambda errors and throttles')?.metrics).toContainEqual([
      'AWS/Lambda',
      'Errors',
      'FunctionName',
      ingest,
      { label: 'Ingest errors', stat: 'Sum' },
    ]);
    const firehose = (widget('Firehose delivery to S3')?.metrics ?? []) as unknown[][];
    expect(firehose.map((m) => m[1])).toEqual(
      store === 'athena'
        ? [...Array(3).fill('DeliveryToS3.Success'), ...Array(3).fill('DeliveryToS3.DataFreshness')]
        : [],
    );
    expect(widget('Alarms')?.alarms).toHaveLength(alarms.size);
    expect(widget('Now: wasted USD/h, fleet waste rate, unmonitored USD/h, silent agents')).toMatchObject({
      view: 'singleValue',
      period: 300,
      metrics: [
        [{ expression: '3600 * wasted / PERIOD(wasted)', label: 'wasted USD/h (ingest)' }],
        ['GpuSentinel', 'WastedUsd', { id: 'wasted', visible: false, stat: 'Sum' }],
        ['GpuSentinel', 'FleetWasteRate', { label: 'fleet waste rate %' }],
        ['GpuSentinel', 'UnmonitoredUsdPerHour', { label: 'unmonitored USD/h' }],
        ['GpuSentinel', 'SilentAgents', { label: 'silent agents', stat: 'Maximum' }],
      ],
    });
  });

  it('gives the ingest function the EMF namespace and service', () => {
    // Act
    const env = (
      Template.fromStack(stack).toJSON() as {
        Resources: Record<string, { Properties: { Environment?: { Variables: Record<string, unknown> } } }>;
      }
    ).Resources[stack.getLogicalId(stack.ingest.function.node.defaultChild as CfnResource)]?.Properties
      .Environment?.Variables;
    // Assess
    expect(env).toMatchObject({
      POWERTOOLS_METRICS_NAMESPACE: 'GpuSentinel',
      POWERTOOLS_SERVICE_NAME: 'gpu-sentinel-ingest',
    });
    expect(env).not.toHaveProperty('METRICS_TEAMS');
  });
});

describe('monitoring props', () => {
  it('passes the metric teams and the thresholds on', () => {
    // Prepare / Act
    const stack = buildStack({
      metricsTeams: ['llm', 'vision'],
      ingest5xxRateThreshold: 0.2,
      wasteRatePercentThreshold: 30,
    });
    const alarms = alarmsOf(stack);
    // Assess
    expect(alarms.get('Ingest5xx')?.Threshold).toBe(0.2);
    expect(alarms.get('FleetWasteRate')?.Threshold).toBe(30);
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: { METRICS_TEAMS: 'llm,vision' } },
    });
  });

  it('adds a later function’s alarms with addFunction, and refuses a name used twice', () => {
    // Prepare
    const stack = buildStack({ store: 'timestream' });
    // Act
    stack.alarms.addFunction({
      name: 'Extra',
      function: stack.ingest.function,
      errorsTopic: 'critical',
    });
    // Assess
    expect(alarmsOf(stack).get('ExtraErrors')?.AlarmActions).toEqual([ref(stack, stack.topics.critical)]);
    expect(() =>
      stack.alarms.addFunction({ name: 'Report', function: stack.ingest.function, errorsTopic: 'warning' }),
    ).toThrow(PropsValidationError);
  });

  it('adds a scheduled function’s not-running alarm with addNotRunning, and refuses a name used twice', () => {
    // Prepare
    const stack = buildStack({ store: 'timestream' });
    // Act
    stack.alarms.addNotRunning({ name: 'Report', function: stack.reports.function });
    // Assess
    expect(alarmsOf(stack).get('ReportNotRunning')).toMatchObject({
      MetricName: 'Invocations',
      TreatMissingData: 'breaching',
      AlarmActions: [ref(stack, stack.topics.warning)],
    });
    expect(() =>
      stack.alarms.addNotRunning({ name: 'FleetEvaluator', function: stack.fleet.function }),
    ).toThrow('Expected `scheduledFunctions[].name` to be a name used once');
  });

  it.each([
    [
      'ingest5xxRateThreshold',
      { ingest5xxRateThreshold: 0 },
      /`ingest5xxRateThreshold` to be a number in \(0, 1\], got `0`/,
    ],
    ['ingest5xxRateThreshold', { ingest5xxRateThreshold: 1.5 }, /`ingest5xxRateThreshold`.*`1.5`/],
    [
      'wasteRatePercentThreshold',
      { wasteRatePercentThreshold: 101 },
      /`wasteRatePercentThreshold` to be a number in \(0, 100\]/,
    ],
    ['wasteRatePercentThreshold', { wasteRatePercentThreshold: Number.NaN }, /`wasteRatePercentThreshold`/],
    ['metricsTeams', { metricsTeams: ['llm', 'other'] }, /`metricsTeams`.*not `other`/],
    ['metricsTeams', { metricsTeams: ['a,b'] }, /`metricsTeams` to be an array of team names without commas/],
    [
      'metricsTeams',
      { metricsTeams: Array.from({ length: 51 }, (_, i) => `team${i}`) },
      /`metricsTeams` to be at most 50/,
    ],
  ])('fails at synth on a bad %s', (_prop, props, message) => {
    // Act / Assess
    expect(() => buildStack(props)).toThrow(PropsValidationError);
    expect(() => buildStack(props)).toThrow(message);
  });
});
