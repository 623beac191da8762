-- SQL workload for bench/suites/compare.sh and accuracy.sh, run as
--   sqlite3 :memory: < sqlite_workload.sql   (after a first line that sets
--   the scale: the suites prepend "CREATE TABLE scale(n); INSERT ...").
-- Deterministic (no random()): the same statements allocate the same bytes
-- from the same sites in every run, so a rate=1 run gives the truth.
-- Exercises what makes sqlite allocate: row building, index creation, a
-- sort, grouped aggregation with string keys, a join and temp b-trees.
PRAGMA cache_size = -16384;
CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT, grp INTEGER, price REAL, note TEXT);
WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq, scale WHERE i < scale.n)
INSERT INTO item(id, name, grp, price, note)
  SELECT i, printf('item-%08d', (i * 7919) % 1000003), i % 97, (i * 31 % 1000) / 7.0,
         substr('lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod', 1 + i % 40)
  FROM seq;
CREATE INDEX item_name ON item(name);
CREATE INDEX item_grp_price ON item(grp, price);
CREATE TABLE grp(id INTEGER PRIMARY KEY, label TEXT);
INSERT INTO grp SELECT DISTINCT grp, 'group ' || grp FROM item;
SELECT count(*), sum(length(name)) FROM (SELECT name FROM item ORDER BY note, price DESC);
SELECT g.label, count(*), avg(i.price), group_concat(substr(i.name, 6, 3), ';') IS NOT NULL
  FROM item i JOIN grp g ON g.id = i.grp GROUP BY g.label ORDER BY 2 DESC LIMIT 3;
SELECT count(DISTINCT note || name) FROM item;
UPDATE item SET note = upper(note) || '!' WHERE id % 3 = 0;
DELETE FROM item WHERE id % 5 = 0;
SELECT count(*) FROM item WHERE name LIKE 'item-00%';
