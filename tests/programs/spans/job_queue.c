// Why: a span's start and end happen on different threads. A job queue:
// the main thread submits jobs (submit_job(job)), worker threads sleep each
// job's duration and complete it (complete_job(job)); the job's pointer is
// the span's key, and jobs come from a small pool, so keys are reused as
// they are meant to be. The program measures each job itself: a span from
// submit_job's entry to complete_job's entry is at least the time from
// submit_job's return to complete_job's call (low_ns) and at most the time
// from submit_job's call to complete_job's return (high_ns).
// Two things a span tracer must count lost: --reused jobs submitted and
// dropped without completion, their pointer submitted again (the key
// started again before its end), and --left-open jobs submitted and never
// completed before the process exits.
//   job-queue [--wait-signal] --truth FILE [--jobs N] [--workers N]
//             [--reused N] [--left-open N]
// Prints "ready pid=N". The truth: {"functions":[],"spans":[{"name":"job",
// "completed":C,"reused":R,"left_open":O,"short_ms":S,"long_ms":L,
// "short":NS,"long":NL,"min_low_ns":..,"max_high_ns":..,"sum_low_ns":..,
// "sum_high_ns":..}]}
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "program_options.h"

#define POOL 8
#define MAX_OPEN 64
#define SHORT_MS 2
#define LONG_MS 12

struct job {
  uint64_t submit_call_ns, submit_return_ns;
  unsigned sleep_ms;
  struct job* next;
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uintptr_t sink;

// The span's start and end: their argument is the job.
__attribute__((noinline)) void submit_job(struct job* job) {
  sink = sink + (uintptr_t)job;
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) void complete_job(struct job* job) {
  sink = sink + (uintptr_t)job;
  __asm__ volatile("" ::: "memory");
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static struct job pool[POOL];
static struct job* free_jobs;
static struct job *queue_head, *queue_tail;
static int stopping;
static unsigned long completed, short_jobs, long_jobs;
static uint64_t min_low_ns = UINT64_MAX, max_high_ns, sum_low_ns, sum_high_ns;

static void* worker(void* arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&lock);
    while (!queue_head && !stopping) pthread_cond_wait(&changed, &lock);
    struct job* job = queue_head;
    if (!job) {
      pthread_mutex_unlock(&lock);
      return NULL;
    }
    queue_head = job->next;
    if (!queue_head) queue_tail = NULL;
    pthread_mutex_unlock(&lock);
    struct timespec pause_for = {0, (long)job->sleep_ms * 1000000L};
    nanosleep(&pause_for, NULL);
    const uint64_t complete_call = now_ns();
    complete_job(job);
    const uint64_t complete_return = now_ns();
    const uint64_t low = complete_call - job->submit_return_ns;
    const uint64_t high = complete_return - job->submit_call_ns;
    pthread_mutex_lock(&lock);
    completed++;
    if (job->sleep_ms == SHORT_MS)
      short_jobs++;
    else
      long_jobs++;
    if (low < min_low_ns) min_low_ns = low;
    if (high > max_high_ns) max_high_ns = high;
    sum_low_ns += low;
    sum_high_ns += high;
    job->next = free_jobs;
    free_jobs = job;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
  }
}

static struct job* take_free_job(void) {
  pthread_mutex_lock(&lock);
  while (!free_jobs) pthread_cond_wait(&changed, &lock);
  struct job* job = free_jobs;
  free_jobs = job->next;
  pthread_mutex_unlock(&lock);
  return job;
}

int main(int argc, char** argv) {
  const char* truth_path = text_option(argc, argv, "--truth");
  const char* jobs_text = text_option(argc, argv, "--jobs");
  const char* workers_text = text_option(argc, argv, "--workers");
  const char* reused_text = text_option(argc, argv, "--reused");
  const char* open_text = text_option(argc, argv, "--left-open");
  const unsigned long jobs = jobs_text ? strtoul(jobs_text, NULL, 10) : 200;
  const unsigned long workers = workers_text ? strtoul(workers_text, NULL, 10) : 4;
  const unsigned long reused = reused_text ? strtoul(reused_text, NULL, 10) : 0;
  const unsigned long left_open = open_text ? strtoul(open_text, NULL, 10) : 0;
  if (!truth_path || workers == 0 || workers > 64 || left_open > MAX_OPEN || reused > jobs) {
    fprintf(stderr,
            "usage: %s [--wait-signal] --truth FILE [--jobs N] [--workers N<=64] [--reused N] "
            "[--left-open N<=%d]\n",
            argv[0], MAX_OPEN);
    return 2;
  }
  for (int i = 0; i < POOL; i++) {
    pool[i].next = free_jobs;
    free_jobs = &pool[i];
  }
  announce_ready(flag_option(argc, argv, "--wait-signal"));
  pthread_t ids[64];
  for (unsigned long i = 0; i < workers; i++) pthread_create(&ids[i], NULL, worker, NULL);
  for (unsigned long i = 0; i < jobs; i++) {
    struct job* job = take_free_job();
    if (i < reused) submit_job(job);  // dropped before completion: its key starts again below
    job->sleep_ms = (i % 4 == 3) ? LONG_MS : SHORT_MS;
    job->next = NULL;
    job->submit_call_ns = now_ns();
    submit_job(job);
    job->submit_return_ns = now_ns();
    pthread_mutex_lock(&lock);
    if (queue_tail)
      queue_tail->next = job;
    else
      queue_head = job;
    queue_tail = job;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
  }
  pthread_mutex_lock(&lock);
  stopping = 1;
  pthread_cond_broadcast(&changed);
  pthread_mutex_unlock(&lock);
  for (unsigned long i = 0; i < workers; i++) pthread_join(ids[i], NULL);
  // Submitted, never completed: open when the process exits.
  static struct job never_done[MAX_OPEN];
  for (unsigned long i = 0; i < left_open; i++) submit_job(&never_done[i]);
  FILE* truth = fopen(truth_path, "w");
  if (!truth) {
    perror(truth_path);
    return 1;
  }
  fprintf(truth,
          "{\"functions\":[],\"spans\":[{\"name\":\"job\",\"completed\":%lu,\"reused\":%lu,"
          "\"left_open\":%lu,\"short_ms\":%d,\"long_ms\":%d,\"short\":%lu,\"long\":%lu,"
          "\"min_low_ns\":%llu,\"max_high_ns\":%llu,\"sum_low_ns\":%llu,\"sum_high_ns\":%llu}]}\n",
          completed, reused, left_open, SHORT_MS, LONG_MS, short_jobs, long_jobs,
          (unsigned long long)min_low_ns, (unsigned long long)max_high_ns,
          (unsigned long long)sum_low_ns, (unsigned long long)sum_high_ns);
  return fclose(truth) == 0 ? 0 : 1;
}
