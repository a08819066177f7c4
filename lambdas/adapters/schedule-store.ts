/**
 * Schedule items of the FrontierTable (docs/frontier.md, "Schedules"): `SCHEDULES` / `<name>`, with
 * the definition (JSON), the run started last (`running`, `claimedAt`), the last completed run
 * (`last`) and counts of runs started and skipped. A run is claimed by one conditional write on the
 * `running` it read, so two copies of one firing start one run.
 */
import {
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { type ScheduleDefinition, ScheduleDefinitionSchema, type ScheduleRuns } from '../core/crawl/index.ts';
import {
  ATTR,
  type Item,
  isConditionFailed,
  N,
  names,
  num,
  S,
  SCHEDULES_PK,
  scheduleKey,
  str,
} from './frontier-schema.ts';

export interface StoredSchedule {
  definition: ScheduleDefinition;
  runs: ScheduleRuns;
}

export class ScheduleExistsError extends Error {
  override name = 'ScheduleExistsError';
}

export class ScheduleStore {
  private readonly dynamodb: DynamoDBClient;
  private readonly table: string;

  constructor(dynamodb: DynamoDBClient, table: string) {
    this.dynamodb = dynamodb;
    this.table = table;
  }

  /** Stores a new schedule; one of that name already there is refused (ScheduleExistsError). */
  async add(definition: ScheduleDefinition): Promise<void> {
    try {
      await this.dynamodb.send(
        new PutItemCommand({
          TableName: this.table,
          Item: {
            ...scheduleKey(definition.name),
            [ATTR.schedule]: S(JSON.stringify(ScheduleDefinitionSchema.parse(definition))),
            [ATTR.runs]: N(0),
            [ATTR.skipped]: N(0),
          },
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: names(ATTR.pk),
        }),
      );
    } catch (error) {
      if (isConditionFailed(error))
        throw new ScheduleExistsError(`a schedule named ${definition.name} already exists`);
      throw error;
    }
  }

  async get(name: string): Promise<StoredSchedule | undefined> {
    const { Item: item } = await this.dynamodb.send(
      new GetItemCommand({ TableName: this.table, Key: scheduleKey(name), ConsistentRead: true }),
    );
    return item === undefined ? undefined : parseSchedule(item);
  }

  async *list(): AsyncGenerator<StoredSchedule> {
    let start: Item | undefined;
    do {
      const page = await this.dynamodb.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: names(ATTR.pk),
          ExpressionAttributeValues: { ':pk': S(SCHEDULES_PK) },
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of page.Items ?? []) {
        const stored = parseSchedule(item);
        if (stored !== undefined) yield stored;
      }
      start = page.LastEvaluatedKey;
    } while (start);
  }

  /** True when there was one to remove. Its runs are crawls like any other and stay. */
  async remove(name: string): Promise<boolean> {
    const { Attributes } = await this.dynamodb.send(
      new DeleteItemCommand({ TableName: this.table, Key: scheduleKey(name), ReturnValues: 'ALL_OLD' }),
    );
    return Attributes !== undefined;
  }

  /**
   * Moves `running` from what the caller read (`expected`) to `crawlId`, and `last` to `since`. False
   * when another firing moved it first (or the schedule was removed): that one starts the run.
   */
  async claimRun(
    name: string,
    expected: string | undefined,
    claim: { crawlId: string; since: string | undefined; at: Date },
  ): Promise<boolean> {
    const values: Item = { ':run': S(claim.crawlId), ':at': S(claim.at.toISOString()), ':one': N(1) };
    if (expected !== undefined) values[':expected'] = S(expected);
    if (claim.since !== undefined) values[':last'] = S(claim.since);
    try {
      await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: scheduleKey(name),
          UpdateExpression:
            `SET #running = :run, #claimedAt = :at, #runs = #runs + :one` +
            (claim.since === undefined ? '' : ', #last = :last'),
          ConditionExpression:
            'attribute_exists(#pk) AND ' +
            (expected === undefined ? 'attribute_not_exists(#running)' : '#running = :expected'),
          ExpressionAttributeNames: names(
            ATTR.pk,
            ATTR.running,
            ATTR.claimedAt,
            ATTR.runs,
            ...(claim.since === undefined ? [] : [ATTR.last]),
          ),
          ExpressionAttributeValues: values,
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw error;
    }
  }

  /** A firing skipped because the previous run still runs: counted, with its time. */
  async recordSkip(name: string, at: Date): Promise<void> {
    try {
      await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: scheduleKey(name),
          UpdateExpression: 'SET #skippedAt = :at ADD #skipped :one',
          ConditionExpression: 'attribute_exists(#pk)',
          ExpressionAttributeNames: names(ATTR.pk, ATTR.skippedAt, ATTR.skipped),
          ExpressionAttributeValues: { ':at': S(at.toISOString()), ':one': N(1) },
        }),
      );
    } catch (error) {
      // Removed meanwhile: nothing left to count on.
      if (!isConditionFailed(error)) throw error;
    }
  }
}

/** An item whose definition no longer parses (written by another version) is left out. */
function parseSchedule(item: Item): StoredSchedule | undefined {
  const text = str(item, ATTR.schedule);
  if (text === undefined) return undefined;
  let definition: ScheduleDefinition;
  try {
    definition = ScheduleDefinitionSchema.parse(JSON.parse(text));
  } catch {
    return undefined;
  }
  const running = str(item, ATTR.running);
  const claimedAt = str(item, ATTR.claimedAt);
  const last = str(item, ATTR.last);
  const skippedAt = str(item, ATTR.skippedAt);
  return {
    definition,
    runs: {
      ...(running === undefined ? {} : { running }),
      ...(claimedAt === undefined ? {} : { claimedAt }),
      ...(last === undefined ? {} : { last }),
      ...(skippedAt === undefined ? {} : { skippedAt }),
      skipped: num(item, ATTR.skipped) ?? 0,
      runs: num(item, ATTR.runs) ?? 0,
    },
  };
}
