# SPDX-License-Identifier: BSD-3-Clause
# A CPU-bound Zeek script workload for the zeek-spy demo and end-to-end tests
# against a real zeek: a timer event drives a few functions of different cost,
# an event with two handler bodies, and BiF calls. Run with: zeek -b workload.zeek
redef exit_only_after_terminate = T;

global tick: event(n: count);
global work_done: event(n: count);

function fib(n: count): count
	{
	if ( n < 2 )
		return n;
	return fib(n - 1) + fib(n - 2);
	}

function hash_strings(n: count): string
	{
	local s = "";
	local i = 0;
	while ( i < n )
		{
		s = md5_hash(fmt("%s-%d", s, i));
		++i;
		}
	return s;
	}

function build_table(n: count): count
	{
	local t: table[count] of string = table();
	local i = 0;
	while ( i < n )
		{
		t[i] = cat(i);
		++i;
		}
	return |t|;
	}

event work_done(n: count)
	{
	fib(16);
	}

event work_done(n: count)
	{
	build_table(200);
	}

event tick(n: count)
	{
	fib(18);
	hash_strings(150);
	build_table(400);
	event work_done(n);
	schedule 5msec { tick(n + 1) };
	}

event zeek_init()
	{
	event tick(0);
	}
