-- index idx_activities_agent_started ON agent_activities
CREATE INDEX idx_activities_agent_started ON agent_activities(agent_id, started_at DESC);

-- index idx_activities_mailbox_item ON agent_activities
CREATE INDEX idx_activities_mailbox_item ON agent_activities(mailbox_item_id);

-- index idx_activity_logs_activity_seq ON agent_activity_logs
CREATE INDEX idx_activity_logs_activity_seq ON agent_activity_logs(activity_id, seq);

-- index idx_chat_messages_session_created ON chat_messages
CREATE INDEX idx_chat_messages_session_created ON chat_messages(session_id, created_at);

-- index idx_chat_sessions_agent_last ON chat_sessions
CREATE INDEX idx_chat_sessions_agent_last ON chat_sessions(agent_id, last_message_at);

-- index idx_conversations_activity ON conversations
CREATE INDEX idx_conversations_activity ON conversations (agent_id, last_activity_at);

-- index idx_daily_log_entries_day ON daily_log_entries
CREATE INDEX idx_daily_log_entries_day ON daily_log_entries (agent_id, day, id);

-- index idx_daily_log_imports ON daily_log_entries
CREATE UNIQUE INDEX idx_daily_log_imports ON daily_log_entries (agent_id, day) WHERE imported;

-- index idx_decisions_agent_created ON agent_decisions
CREATE INDEX idx_decisions_agent_created ON agent_decisions(agent_id, created_at);

-- index idx_decisions_mailbox_item ON agent_decisions
CREATE INDEX idx_decisions_mailbox_item ON agent_decisions(mailbox_item_id);

-- index idx_mailbox_agent_priority ON mailbox_items
CREATE INDEX idx_mailbox_agent_priority ON mailbox_items(agent_id, priority, queued_at);

-- index idx_mailbox_agent_source ON mailbox_items
CREATE INDEX idx_mailbox_agent_source ON mailbox_items(agent_id, source_type);

-- index idx_mailbox_agent_status ON mailbox_items
CREATE INDEX idx_mailbox_agent_status ON mailbox_items(agent_id, status);

-- index idx_recall_vectors_agent ON recall_vectors
CREATE INDEX idx_recall_vectors_agent ON recall_vectors(agent, model, doc);

-- index idx_recall_vectors_list ON recall_vectors
CREATE INDEX idx_recall_vectors_list ON recall_vectors(agent, model, list, doc);

-- index idx_transcript_agent_created ON transcript_messages
CREATE INDEX idx_transcript_agent_created ON transcript_messages(agent_id, created_at);

-- index idx_transcript_keys ON transcript_messages
CREATE INDEX idx_transcript_keys ON transcript_messages(agent_id, session_id, seq, role, speaker) WHERE trim(content) <> '';

-- index sqlite_autoindex__markus_migrations_1 ON _markus_migrations
None;

-- index sqlite_autoindex_activity_search_docs_1 ON activity_search_docs
None;

-- index sqlite_autoindex_agent_activities_1 ON agent_activities
None;

-- index sqlite_autoindex_agent_decisions_1 ON agent_decisions
None;

-- index sqlite_autoindex_agent_slots_1 ON agent_slots
None;

-- index sqlite_autoindex_agent_slots_2 ON agent_slots
None;

-- index sqlite_autoindex_chat_messages_1 ON chat_messages
None;

-- index sqlite_autoindex_chat_sessions_1 ON chat_sessions
None;

-- index sqlite_autoindex_conversations_1 ON conversations
None;

-- index sqlite_autoindex_mailbox_items_1 ON mailbox_items
None;

-- index sqlite_autoindex_recall_agents_1 ON recall_agents
None;

-- index sqlite_autoindex_recall_vectors_1 ON recall_vectors
None;

-- index sqlite_autoindex_transcript_marks_1 ON transcript_marks
None;

-- index sqlite_autoindex_transcript_messages_1 ON transcript_messages
None;

-- table _markus_migrations ON _markus_migrations
CREATE TABLE _markus_migrations ( migration_set TEXT NOT NULL, name TEXT NOT NULL, applied_at TEXT NOT NULL, PRIMARY KEY (migration_set, name));

-- table activity_fts ON activity_fts
CREATE VIRTUAL TABLE activity_fts USING fts5(label, summary, keywords, logs, tokenize="ascii tokenchars '.'");

-- table activity_fts_config ON activity_fts_config
CREATE TABLE 'activity_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;

-- table activity_fts_content ON activity_fts_content
CREATE TABLE 'activity_fts_content'(id INTEGER PRIMARY KEY, c0, c1, c2, c3);

-- table activity_fts_data ON activity_fts_data
CREATE TABLE 'activity_fts_data'(id INTEGER PRIMARY KEY, block BLOB);

-- table activity_fts_docsize ON activity_fts_docsize
CREATE TABLE 'activity_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB);

-- table activity_fts_idx ON activity_fts_idx
CREATE TABLE 'activity_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;

-- table activity_search_docs ON activity_search_docs
CREATE TABLE activity_search_docs (
  rowid INTEGER PRIMARY KEY,
  activity_id TEXT NOT NULL UNIQUE REFERENCES agent_activities(id) ON DELETE CASCADE,
  agent_id TEXT NOT NULL
);

-- table agent_activities ON agent_activities
CREATE TABLE agent_activities (
  id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  mailbox_item_id TEXT,
  type TEXT NOT NULL,
  label TEXT NOT NULL,
  task_id TEXT,
  started_at TEXT NOT NULL,
  ended_at TEXT,
  total_tokens INTEGER DEFAULT 0,
  total_tools INTEGER DEFAULT 0,
  success INTEGER DEFAULT 1,
  summary TEXT DEFAULT '',
  keywords TEXT DEFAULT '',
  created_at TEXT NOT NULL DEFAULT (datetime('now'))
);

-- table agent_activity_logs ON agent_activity_logs
CREATE TABLE agent_activity_logs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  activity_id TEXT NOT NULL REFERENCES agent_activities(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  content TEXT NOT NULL DEFAULT '',
  metadata TEXT DEFAULT '{}',
  created_at TEXT NOT NULL DEFAULT (datetime('now'))
);

-- table agent_decisions ON agent_decisions
CREATE TABLE agent_decisions (
  id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  decision_type TEXT NOT NULL,
  mailbox_item_id TEXT NOT NULL,
  context TEXT,
  reasoning TEXT,
  outcome TEXT,
  created_at TEXT NOT NULL DEFAULT (datetime('now'))
);

-- table agent_slots ON agent_slots
CREATE TABLE agent_slots (
  agent_id TEXT PRIMARY KEY,
  slot INTEGER NOT NULL UNIQUE
);

-- table chat_messages ON chat_messages
CREATE TABLE chat_messages (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES chat_sessions(id) ON DELETE CASCADE,
  agent_id TEXT NOT NULL,
  role TEXT NOT NULL,
  content TEXT NOT NULL DEFAULT '',
  metadata TEXT,
  tokens_used INTEGER DEFAULT 0,
  created_at TEXT NOT NULL DEFAULT (datetime('now'))
);

-- table chat_sessions ON chat_sessions
CREATE TABLE chat_sessions (
  id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  user_id TEXT,
  title TEXT,
  is_main INTEGER NOT NULL DEFAULT 0,
  metadata TEXT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  last_message_at TEXT
);

-- table conversations ON conversations
CREATE TABLE conversations (
  agent_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  started_at TEXT NOT NULL,
  last_activity_at TEXT NOT NULL,
  first_seq INTEGER NOT NULL,
  next_seq INTEGER NOT NULL,
  view_from INTEGER NOT NULL,
  summary TEXT,
  title TEXT,
  details TEXT,
  PRIMARY KEY (agent_id, session_id)
);

-- table daily_log_entries ON daily_log_entries
CREATE TABLE daily_log_entries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  agent_id TEXT NOT NULL,
  day TEXT NOT NULL,
  text TEXT NOT NULL,
  imported INTEGER NOT NULL DEFAULT 0
);

-- table mailbox_items ON mailbox_items
CREATE TABLE mailbox_items (
  id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  source_type TEXT NOT NULL,
  priority INTEGER DEFAULT 2,
  status TEXT DEFAULT 'queued',
  payload TEXT,
  metadata TEXT,
  queued_at TEXT NOT NULL,
  started_at TEXT,
  completed_at TEXT,
  deferred_until TEXT,
  merged_into TEXT,
  retry_count INTEGER DEFAULT 0
);

-- table recall_agents ON recall_agents
CREATE TABLE recall_agents (agent BIGINT PRIMARY KEY, docs BIGINT NOT NULL, tokens BIGINT NOT NULL);

-- table recall_postings ON recall_postings
CREATE TABLE recall_postings (term BIGINT NOT NULL, doc BIGINT NOT NULL, tf INTEGER NOT NULL, len INTEGER NOT NULL, PRIMARY KEY (term, doc)) WITHOUT ROWID;

-- table recall_speakers ON recall_speakers
CREATE TABLE recall_speakers (agent BIGINT NOT NULL, word TEXT NOT NULL, PRIMARY KEY (agent, word)) WITHOUT ROWID;

-- table recall_terms ON recall_terms
CREATE TABLE recall_terms (term INTEGER PRIMARY KEY, agent BIGINT NOT NULL, docs BIGINT NOT NULL);

-- table recall_vector_lists ON recall_vector_lists
CREATE TABLE recall_vector_lists (agent BIGINT NOT NULL, model TEXT NOT NULL, list BIGINT NOT NULL, made_from BIGINT NOT NULL, centroid BLOB NOT NULL, PRIMARY KEY (agent, model, list)) WITHOUT ROWID;

-- table recall_vectors ON recall_vectors
CREATE TABLE recall_vectors (doc BIGINT PRIMARY KEY, agent BIGINT NOT NULL, model TEXT NOT NULL, vector BLOB NOT NULL, list BIGINT);

-- table sqlite_sequence ON sqlite_sequence
CREATE TABLE sqlite_sequence(name,seq);

-- table transcript_marks ON transcript_marks
CREATE TABLE transcript_marks (
  agent_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  next_seq INTEGER NOT NULL,
  synced_at TEXT NOT NULL,
  PRIMARY KEY (agent_id, session_id)
);

-- table transcript_messages ON transcript_messages
CREATE TABLE transcript_messages (
  id INTEGER PRIMARY KEY,
  agent_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  role TEXT NOT NULL,
  content TEXT NOT NULL,
  created_at TEXT NOT NULL, speaker TEXT, metadata TEXT, body TEXT,
  UNIQUE (agent_id, session_id, seq)
);

