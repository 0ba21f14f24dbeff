import { type CfnElement, type CfnResource, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { firehoseJsonKey, firehoseJsonKeyMappings } from '../../lambdas/domain/firehose-json-keys';
import { TELEMETRY_TABLE_COLUMNS, TELEMETRY_TABLES } from '../../lambdas/domain/store-columns';
import { AthenaTelemetryStore } from '../../lib/athena-telemetry-store';
import type { GpuSentinelStack } from '../../lib/gpu-sentinel-stack';
import { PropsValidationError } from '../../lib/props-validation-error';
import { buildStack, sharedStack, testApp } from './build-stack';
import { actionsOf, resourcesOf, roleStatements, statementsGranting } from './iam-statements';

/** The logical id of a construct's CloudFormation resource (its default child, or itself). */
const id = (stack: Stack, c: IConstruct): string =>
  stack.getLogicalId((c.node.defaultChild ?? c) as CfnElement);

describe('AthenaTelemetryStore (the default store)', () => {
  let stack: GpuSentinelStack;
  let store: AthenaTelemetryStore;
  let template: Template;

  beforeAll(() => {
    stack = buildStack();
    store = stack.athenaStore as AthenaTelemetryStore;
    template = Template.fromStack(stack);
  });

  it.each(['AWS::Timestream::Database', 'AWS::Timestream::Table'])('creates no %s by default', (type) => {
    // Prepare / Act / Assess
    template.resourceCountIs(type, 0);
  });

  it('creates Timestream and no Firehose, Glue or Athena resource with store timestream', () => {
    // Prepare / Act
    const timestream = sharedStack({ store: 'timestream' }).template;

    // Assess
    timestream.resourceCountIs('AWS::Timestream::Database', 1);
    timestream.resourceCountIs('AWS::Timestream::Table', 3);
    for (const type of [
      'AWS::KinesisFirehose::DeliveryStream',
      'AWS::Glue::Table',
      'AWS::Athena::WorkGroup',
    ]) {
      timestream.resourceCountIs(type, 0);
    }
  });

  it('gives Timestream a KMS-encrypted location for rejected magnetic-store writes, per table', () => {
    // Prepare
    const { stack: timestream, template: t } = sharedStack({ store: 'timestream' });
    const bucket = id(timestream, timestream.database?.rejectedDataBucket as IConstruct);

    // Act / Assess
    for (const table of TELEMETRY_TABLES) {
      t.hasResourceProperties('AWS::Timestream::Table', {
        TableName: table,
        MagneticStoreWriteProperties: {
          EnableMagneticStoreWrites: true,
          MagneticStoreRejectedDataLocation: {
            S3Configuration: {
              BucketName: { Ref: bucket },
              ObjectKeyPrefix: `timestream-magnetic-rejects/${table}/`,
              EncryptionOption: 'SSE_KMS',
              KmsKeyId: Match.anyValue(),
            },
          },
        },
      });
    }
  });

  it('names the Glue database after the stack and deletes the catalog with it, keeping the buckets', () => {
    // Prepare / Act
    const catalog = [
      ...Object.values(template.findResources('AWS::Glue::Database')),
      ...Object.values(template.findResources('AWS::Glue::Table')),
    ];
    const buckets = Object.values(template.findResources('AWS::S3::Bucket'));

    // Assess
    template.hasResourceProperties('AWS::Glue::Database', { DatabaseInput: { Name: 'test_stack' } });
    expect(catalog).toHaveLength(4);
    for (const r of catalog) expect(r.DeletionPolicy ?? 'Delete').toBe('Delete');
    for (const r of buckets) expect(r.DeletionPolicy).toBe('Retain');
  });

  it('encrypts the telemetry bucket with the stack’s rotating key, blocks public access and logs access', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [
          {
            BucketKeyEnabled: true,
            ServerSideEncryptionByDefault: {
              SSEAlgorithm: 'aws:kms',
              KMSMasterKeyID: { 'Fn::GetAtt': [id(stack, store.key), 'Arn'] },
            },
          },
        ],
      },
      PublicAccessBlockConfiguration: Match.objectLike({
        BlockPublicAcls: true,
        RestrictPublicBuckets: true,
      }),
      LoggingConfiguration: { DestinationBucketName: { Ref: id(stack, store.accessLogsBucket) } },
      VersioningConfiguration: { Status: 'Enabled' },
    });
    template.hasResourceProperties('AWS::KMS::Key', {
      EnableKeyRotation: true,
      Description: Match.stringLikeRegexp('encrypts its buckets, streams, topics, store and log groups'),
    });
  });

  it('denies every request to the telemetry bucket without TLS', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: id(stack, store.bucket) },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it.each([
    [365, 'GLACIER_IR'],
    [120, 'GLACIER_IR'],
    [119, 'STANDARD_IA'],
    [60, 'STANDARD_IA'],
    [59, undefined],
  ] as const)('moves telemetry files over 128 KiB kept %i days to %s after 30 days', (days, storageClass) => {
    // Prepare
    const { stack: s, template: t } = sharedStack({ telemetryRetentionDays: days });
    const bucket = t.findResources('AWS::S3::Bucket')[id(s, s.athenaStore?.bucket as IConstruct)];

    // Act
    const rules = bucket?.Properties.LifecycleConfiguration.Rules as Array<Record<string, unknown>>;
    const cold = rules.filter((r) => String(r.Id).startsWith('cold-storage-'));

    // Assess
    if (storageClass === undefined) {
      expect(cold).toEqual([]);
      return;
    }
    expect(cold).toHaveLength(3);
    for (const table of ['gpu_windows', 'efa_windows', 'events']) {
      expect(rules).toContainEqual({
        Id: `cold-storage-${table}`,
        Prefix: `${table}/`,
        ObjectSizeGreaterThan: '131072',
        Transitions: [{ StorageClass: storageClass, TransitionInDays: 30 }],
        Status: 'Enabled',
      });
    }
  });

  it('expires telemetry after a year, query results after 7 days, errors after 30, and aborts stale uploads', () => {
    // Prepare
    const bucket = template.findResources('AWS::S3::Bucket')[id(stack, store.bucket)];

    // Act
    const rules = bucket?.Properties.LifecycleConfiguration.Rules as Array<Record<string, unknown>>;

    // Assess
    const byPrefix = Object.fromEntries(
      rules
        .filter((r) => r.ExpirationInDays !== undefined)
        .map((r) => [String(r.Prefix), r.ExpirationInDays]),
    );
    expect(byPrefix).toMatchObject({
      'gpu_windows/': 365,
      'efa_windows/': 365,
      'events/': 365,
      'athena-results/': 7,
      'firehose-errors/': 30,
    });
    expect(rules).toContainEqual(
      expect.objectContaining({
        AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
        Status: 'Enabled',
      }),
    );
  });

  it.each(TELEMETRY_TABLES)(
    'declares Glue table %s: Parquet SerDe, the adapters’ columns, projected by Firehose’s hour prefix',
    (table) => {
      // Prepare
      const glueType = {
        TIMESTAMP: 'timestamp',
        VARCHAR: 'string',
        INTEGER: 'int',
        BIGINT: 'bigint',
        DOUBLE: 'double',
        BOOLEAN: 'boolean',
        MAP_VARCHAR_BIGINT: 'map<string,bigint>',
      } as const;
      const location = { 'Fn::Join': ['', ['s3://', { Ref: id(stack, store.bucket) }, `/${table}/`]] };

      // Act / Assess
      template.hasResourceProperties('AWS::Glue::Table', {
        DatabaseName: 'test_stack',
        TableInput: {
          Name: table,
          TableType: 'EXTERNAL_TABLE',
          PartitionKeys: [{ Name: 'datehour', Type: 'string' }],
          Parameters: {
            classification: 'parquet',
            'projection.enabled': 'true',
            'projection.datehour.type': 'date',
            'projection.datehour.format': 'yyyy/MM/dd/HH',
            'projection.datehour.range': '2025/01/01/00,NOW',
            'projection.datehour.interval': '1',
            'projection.datehour.interval.unit': 'HOURS',
            'storage.location.template': {
              'Fn::Join': ['', ['s3://', { Ref: id(stack, store.bucket) }, `/${table}/\${datehour}/`]],
            },
          },
          StorageDescriptor: {
            Location: location,
            Columns: TELEMETRY_TABLE_COLUMNS[table].map(([Name, type]) => ({ Name, Type: glueType[type] })),
            InputFormat: 'org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat',
            OutputFormat: 'org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat',
            SerdeInfo: {
              SerializationLibrary: 'org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe',
            },
          },
        },
      });
    },
  );

  it('creates no Glue crawler (partition projection finds the partitions)', () => {
    // Prepare / Act / Assess
    template.resourceCountIs('AWS::Glue::Crawler', 0);
  });

  it.each(TELEMETRY_TABLES)(
    'delivers %s through an encrypted Direct PUT stream converting JSON to Parquet with the Glue schema',
    (table) => {
      // Prepare / Act / Assess
      template.hasResourceProperties('AWS::KinesisFirehose::DeliveryStream', {
        DeliveryStreamType: 'DirectPut',
        DeliveryStreamEncryptionConfigurationInput: {
          KeyType: 'CUSTOMER_MANAGED_CMK',
          KeyARN: { 'Fn::GetAtt': [id(stack, store.key), 'Arn'] },
        },
        ExtendedS3DestinationConfiguration: Match.objectLike({
          BucketARN: { 'Fn::GetAtt': [id(stack, store.bucket), 'Arn'] },
          Prefix: `${table}/`,
          ErrorOutputPrefix: `firehose-errors/${table}/!{firehose:error-output-type}/!{timestamp:yyyy/MM/dd/HH}/`,
          BufferingHints: { SizeInMBs: 128, IntervalInSeconds: 300 },
          CompressionFormat: 'UNCOMPRESSED',
          CloudWatchLoggingOptions: Match.objectLike({ Enabled: true }),
          DataFormatConversionConfiguration: {
            Enabled: true,
            InputFormatConfiguration: {
              Deserializer: { OpenXJsonSerDe: { ColumnToJsonKeyMappings: firehoseJsonKeyMappings(table) } },
            },
            OutputFormatConfiguration: { Serializer: { ParquetSerDe: { Compression: 'SNAPPY' } } },
            SchemaConfiguration: Match.objectLike({
              DatabaseName: 'test_stack',
              TableName: table,
              VersionId: 'LATEST',
              RoleARN: { 'Fn::GetAtt': [id(stack, store.deliveryRole), 'Arn'] },
            }),
          },
        }),
      });
    },
  );

  it.each(TELEMETRY_TABLES)(
    'has the %s stream read every column of its Glue table under one JSON key of its own, the key the adapter writes',
    (table) => {
      // Prepare
      const glueTable = Object.values(template.findResources('AWS::Glue::Table')).find(
        (t) => t.Properties.TableInput.Name === table,
      );
      const stream = Object.values(template.findResources('AWS::KinesisFirehose::DeliveryStream')).find(
        (s) => s.Properties.ExtendedS3DestinationConfiguration.Prefix === `${table}/`,
      );
      const mappings: Record<string, string> =
        stream?.Properties.ExtendedS3DestinationConfiguration.DataFormatConversionConfiguration
          .InputFormatConfiguration.Deserializer.OpenXJsonSerDe.ColumnToJsonKeyMappings ?? {};

      // Act
      const columns = (
        (glueTable?.Properties.TableInput.StorageDescriptor.Columns ?? []) as { Name: string }[]
      ).map((c) => c.Name);
      const keys = columns.map((c) => mappings[c] ?? c);

      // Assess
      expect(columns.length).toBeGreaterThan(0);
      expect(new Set(keys).size).toBe(columns.length);
      expect(keys).toEqual(columns.map((c) => firehoseJsonKey(table, c)));
      expect(Object.keys(mappings).every((c) => columns.includes(c))).toBe(true);
    },
  );

  it('buffers at least 64 MiB, as format conversion requires, and 60..900 s', () => {
    // Prepare
    const streams = Object.values(template.findResources('AWS::KinesisFirehose::DeliveryStream'));

    // Act
    const hints = streams.map((s) => s.Properties.ExtendedS3DestinationConfiguration.BufferingHints);

    // Assess
    expect(hints).toHaveLength(3);
    for (const h of hints) {
      expect(h.SizeInMBs).toBeGreaterThanOrEqual(64);
      expect(h.SizeInMBs).toBeLessThanOrEqual(128);
      expect(h.IntervalInSeconds).toBeGreaterThanOrEqual(60);
      expect(h.IntervalInSeconds).toBeLessThanOrEqual(900);
    }
  });

  it('lets Firehose read only the three Glue tables and write only the table and error prefixes', () => {
    // Prepare
    const statements = roleStatements(template, id(stack, store.deliveryRole));

    // Act
    const actions = [...new Set(statements.flatMap(actionsOf))].sort();

    // Assess
    expect(actions).toEqual(
      [
        'glue:GetTable',
        'glue:GetTableVersion',
        'glue:GetTableVersions',
        'kms:Decrypt',
        'kms:GenerateDataKey',
        'logs:CreateLogStream',
        'logs:PutLogEvents',
        's3:AbortMultipartUpload',
        's3:GetBucketLocation',
        's3:GetObject',
        's3:ListBucket',
        's3:ListBucketMultipartUploads',
        's3:PutObject',
      ].sort(),
    );
    const put = statementsGranting(statements, 's3:PutObject').flatMap(resourcesOf);
    expect(JSON.stringify(put)).not.toMatch(/"\/\*"/);
    expect(put).toHaveLength(4);
  });

  it('runs reads in an engine v3 workgroup that enforces KMS-encrypted results and caps the scan', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::Athena::WorkGroup', {
      State: 'ENABLED',
      WorkGroupConfiguration: {
        EnforceWorkGroupConfiguration: true,
        PublishCloudWatchMetricsEnabled: true,
        BytesScannedCutoffPerQuery: 50 * 1024 ** 3,
        EngineVersion: { SelectedEngineVersion: 'Athena engine version 3' },
        ResultConfiguration: {
          OutputLocation: {
            'Fn::Join': ['', ['s3://', { Ref: id(stack, store.bucket) }, '/athena-results/']],
          },
          ExpectedBucketOwner: { Ref: 'AWS::AccountId' },
          EncryptionConfiguration: {
            EncryptionOption: 'SSE_KMS',
            KmsKey: { 'Fn::GetAtt': [id(stack, store.key), 'Arn'] },
          },
        },
      },
    });
  });

  it('lets the ingest Lambda put records on the three streams and nothing else of the store', () => {
    // Prepare
    const statements = roleStatements(template, id(stack, stack.ingest.role));

    // Act
    const granting = statementsGranting(statements, 'firehose:PutRecordBatch');

    // Assess
    expect(granting.flatMap(actionsOf)).toEqual(['firehose:PutRecordBatch']);
    // IAM gives resources no order (the minimizePolicies feature flag sorts them).
    expect(granting.flatMap(resourcesOf)).toEqual(
      expect.arrayContaining(
        TELEMETRY_TABLES.map((t) => ({ 'Fn::GetAtt': [id(stack, store.streams[t]), 'Arn'] })),
      ),
    );
    expect(granting.flatMap(resourcesOf)).toHaveLength(TELEMETRY_TABLES.length);
    const all = statements.flatMap(actionsOf);
    expect(all.filter((a) => /^(timestream|athena|glue|s3):/.test(a))).toEqual([]);
  });

  it('tells the ingest Lambda the store, the stream names, the database and the workgroup', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          STORE: 'athena',
          FIREHOSE_GPU_STREAM: { Ref: id(stack, store.streams.gpu_windows) },
          FIREHOSE_EFA_STREAM: { Ref: id(stack, store.streams.efa_windows) },
          FIREHOSE_EVENTS_STREAM: { Ref: id(stack, store.streams.events) },
          ATHENA_DATABASE: 'test_stack',
          ATHENA_WORKGROUP: { Ref: id(stack, store.workGroup) },
        }),
      },
    });
  });

  it('grants readers Athena on the workgroup, Glue on the tables, S3 read of the tables and the results prefix', () => {
    // Prepare
    const s = new Stack(testApp(), 'ReaderStack');
    const athenaStore = new AthenaTelemetryStore(s, 'Store');
    const reader = new iam.Role(s, 'Reader', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });

    // Act
    athenaStore.grantRead(reader);

    // Assess
    const statements = roleStatements(
      Template.fromStack(s),
      s.getLogicalId(reader.node.defaultChild as CfnResource),
    );
    expect([...new Set(statements.flatMap(actionsOf))].sort()).toEqual(
      [
        'athena:GetQueryExecution',
        'athena:GetQueryResults',
        'athena:StartQueryExecution',
        'athena:StopQueryExecution',
        'glue:GetDatabase',
        'glue:GetTable',
        'kms:Decrypt',
        'kms:GenerateDataKey',
        's3:AbortMultipartUpload',
        's3:GetBucketLocation',
        's3:GetObject',
        's3:ListBucket',
        's3:PutObject',
      ].sort(),
    );
    expect(statements.flatMap(actionsOf).some((a) => a.endsWith('*'))).toBe(false);
    expect(statementsGranting(statements, 'athena:StartQueryExecution').flatMap(resourcesOf)).toHaveLength(1);
  });

  it.each([
    [{ store: 'dynamodb' as never }, 'store'],
    [{ databaseName: 'Gpu-Sentinel' }, 'databaseName'],
    [{ telemetryRetentionDays: 0 }, 'retentionDays'],
    [{ telemetryRetentionDays: 1.5 }, 'retentionDays'],
    [{ firehoseBufferIntervalSeconds: 59 }, 'bufferIntervalSeconds'],
    [{ firehoseBufferIntervalSeconds: 901 }, 'bufferIntervalSeconds'],
  ])('fails synth for %j, naming %s', (props, prop) => {
    // Prepare
    const build = () => buildStack(props);

    // Act / Assess
    expect(build).toThrow(PropsValidationError);
    expect(build).toThrow(new RegExp(`\`${prop}\``));
  });

  it('uses the given retention and buffer interval', () => {
    // Prepare / Act
    const t = Template.fromStack(
      buildStack({ telemetryRetentionDays: 730, firehoseBufferIntervalSeconds: 900 }),
    );

    // Assess
    t.hasResourceProperties('AWS::KinesisFirehose::DeliveryStream', {
      ExtendedS3DestinationConfiguration: Match.objectLike({
        BufferingHints: { SizeInMBs: 128, IntervalInSeconds: 900 },
      }),
    });
    t.hasResourceProperties('AWS::S3::Bucket', {
      LifecycleConfiguration: {
        Rules: Match.arrayWith([Match.objectLike({ Prefix: 'gpu_windows/', ExpirationInDays: 730 })]),
      },
    });
  });
});
