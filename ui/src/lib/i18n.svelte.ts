// Chinese/English labels (cheap: a flat dictionary). English is the fallback.
const zh: Record<string, string> = {
  'This model profile has no API key yet. Add it in the model setup (it is kept in your system keyring), or pick another profile.':
    '这个模型配置还没有 API 密钥。请在模型设置中添加（保存在系统密钥环中），或换一个配置。',
  'The model profile cannot be used as it is. Check its base URL, model name and key in the model setup, and test the connection.':
    '这个模型配置暂时无法使用。请在模型设置中检查它的地址、模型名称和密钥，并测试连接。',
  // Connection test and first-start setup (issue #15, issue #14 item 3).
  'Testing the connection on a synthetic image…': '正在用一张合成图片测试连接…',
  'Connection works.': '连接正常。', 'The connection test failed at a step below.': '连接测试在下面的某一步失败了。',
  Family: '模型家族', Fix: '解决办法', 'The model answered': '模型的回答',
  Reachable: '可以连通', 'Key accepted': '密钥有效', 'Model listed': '模型在列表中', 'Vision request answered': '图像请求已应答',
  'Family grammar parsed': '家族格式解析成功', 'Coordinate contract': '坐标约定',
  'Set up the model': '设置模型',
  'PhoneAgent needs a vision model to look at the phone. Pick how you reach it, test the connection and save; the task starts right after.':
    'PhoneAgent 需要一个视觉模型来看手机屏幕。请选择连接方式，测试连接并保存；保存后任务立即开始。',
  'Provider preset': '服务商预设', Custom: '自定义', 'Base URL': '接口地址', Model: '模型', 'API key': 'API 密钥',
  'Paste API key…': '粘贴 API 密钥…', 'Not needed for a local server': '本地服务器无需密钥',
  'The key goes to your system keyring only.': '密钥只保存到系统密钥环。', 'This server needs no key': '这个服务器不需要密钥',
  Cancel: '取消', 'Test connection': '测试连接', 'Save and start': '保存并开始', 'Loading…': '加载中…',
  'Model family': '模型家族', auto: '自动', detected: '识别为', 'detected from the model name': '根据模型名称自动识别',
  'set here': '在此指定', coordinates: '坐标',
  'Runs on a synthetic image, never on the phone. Uses the key stored in the keyring.': '只用合成图片测试，不会操作手机。使用密钥环中保存的密钥。',
  'No phone is selected. Plug in a phone with USB debugging on and pick it in Devices, or start the virtual phone.':
    '尚未选择手机。请连接已开启 USB 调试的手机并在“设备”中选择它，或启动虚拟手机。',
  'The phone is not reachable right now. Unlock it, accept the "Allow USB debugging?" prompt if it shows one, check the cable, then refresh Devices.':
    '现在连不上手机。请解锁手机，如出现“允许 USB 调试吗？”请允许，检查数据线，然后刷新“设备”。',
  'No task is running.': '没有正在运行的任务。',
  'A task is already running on this phone. Stop it or wait for it to end.': '这台手机上已有任务在运行。请先停止或等待它结束。',
  'Open Settings': '打开设置', Details: '详情',
  Run: '运行', History: '历史', Settings: '设置', Devices: '设备', Mirror: '镜像', Task: '任务', Timeline: '时间线',
  'Start virtual phone': '启动虚拟手机', Refresh: '刷新', Use: '使用', 'In use': '使用中', Start: '开始', Stop: '停止',
  'Max steps': '最大步数', 'Model profile': '模型配置', 'Access mode': '安全模式', Off: '关闭', Wary: '谨慎',
  'Ask me (hard)': '询问我（严格）', Reviewer: '审查员', Approve: '批准', Reject: '拒绝', 'Hand back': '交还控制',
  Send: '发送', Save: '保存', Delete: '删除', 'Save key': '保存密钥', Export: '导出', Recent: '最近', Presets: '预设',
  'No phone selected': '未选择手机', 'Approval needed': '需要批准', 'The agent asks': '智能体提问',
  'Reviews left': '剩余审查', 'Failures left': '剩余失败', 'Denials in a row': '连续拒绝', 'override pending': '个待用放行',
  'No denials yet.': '尚无拒绝。', 'Allow once': '放行一次', 'Allowed once': '已放行一次',
  Pause: '暂停', Resume: '继续', 'Approve for me': '替我审批',
  Approvals: '审批', Action: '操作', Decision: '决定', Risk: '风险', Authorization: '授权', Reason: '理由', Policy: '策略',
  Latency: '耗时', Budget: '预算', Breaker: '熔断', reviewer: '审批模型', you: '你', rule: '规则', policy: '策略配置',
  by: '由', delegated: '已转人工', verdict: '裁决', 'one-time override': '一次性放行', cached: '缓存', allowed: '已放行',
  denied: '已拒绝', allow: '放行', deny: '拒绝', uncertain: '不确定', low: '低', medium: '中', high: '高', critical: '严重',
  none: '无', 'reviewer failed': '审批模型失败', total: '总计', open: '已熔断', Ledger: '审批记录',
  'No approve-for-me requests in this run.': '本次任务没有“替我审批”请求。',
  'Budget: reviews left / reviewer failures left. Breaker: denials in a row · denials / reviews in the window.':
    '预算：剩余审查次数 / 剩余失败次数。熔断：连续拒绝 · 窗口内拒绝数 / 审查数。',
  'Off: every request the reviewer would judge goes to you.': '关闭后，本应由审批模型判断的请求都交给你。',
  off: '关', on: '开', 'Reviewer model': '审批模型', 'not set (requests go to you)': '未设置（请求交给你）',
  'Saved: used from the next run': '已保存：从下次任务起生效', Window: '窗口', 'breaker open': '已熔断',
  'This run is not in Approve-for-me mode: approvals come to you.': '本次任务不是“替我审批”模式：审批由你决定。',
  'approval policy': '审批策略', 'reviewer decides': '审批模型决定', 'ask me': '问我', 'never allow': '一律禁止',
  'Which approval requests the reviewer model may decide. Rules are tried first, top to bottom; then the tool table; then the default. Used from the next run.':
    '哪些审批请求可由审批模型决定。先自上而下匹配规则，再查工具表，最后用默认策略。从下次任务起生效。',
  Source: '来源', 'app settings': '应用设置', defaults: '默认值', Rules: '规则', 'Pattern (regex)': '模式（正则）',
  'Matched against': '匹配对象', Then: '则', Note: '备注', Up: '上移', Down: '下移', Remove: '删除', 'No rules.': '没有规则。',
  'Add rule': '添加规则', 'Per tool': '按工具', default: '默认', Default: '默认', Gates: '闸门',
  'Highest risk the reviewer may allow': '审批模型可放行的最高风险', 'An allow above it': '超过时的放行',
  'Reviewer is uncertain': '审批模型不确定时', 'Reviewer fails (timeout, error, bad answer)': '审批模型失败（超时、错误、无效回答）',
  'Reviewer timeout (s)': '审批超时（秒）', 'Reviews per run': '每次任务的审查次数', 'When the reviews are used up': '审查次数用完后',
  'Reviewer failures per run': '每次任务允许的审批失败次数', 'Denials in a row that trip the breaker': '触发熔断的连续拒绝次数',
  '…or denials within the last N reviews': '…或最近 N 次审查中的拒绝次数', 'A tripped breaker': '熔断后',
  'stops the run': '停止任务', 'asks me from then on': '之后都问我', 'denies from then on': '之后一律拒绝',
  '"Allow once" is valid for (min)': '“放行一次”有效期（分钟）', 'Tell the agent why a request was denied': '告诉智能体拒绝的理由',
  '…and why one was allowed': '…以及放行的理由', 'Reuse verdicts for identical requests (cache)': '相同请求复用裁决（缓存）',
  'Extra guidance for the reviewer': '给审批模型的额外指引', 'Save policy': '保存策略', Saved: '已保存',
  arguments: '参数', tool: '工具',
  'Run demo': '运行演示', 'No phone or model yet? Watch a demo on the virtual phone with a scripted model:': '还没有手机或模型？在虚拟手机上用脚本模型看一次演示：',
  'Past runs': '历史任务', 'No runs yet.': '还没有任务。', 'Export JSON': '导出 JSON', 'Export HTML': '导出 HTML',
  Replay: '回放', 'All steps': '全部步骤', 'Approval ledger': '审批记录', 'Gate decisions and approvals': '闸门决定与审批',
  Step: '步骤', Kind: '类型', Tool: '工具', Tier: '级别', By: '决定者',
  'No gate decisions or approvals in this run.': '本次任务没有闸门决定或审批。', 'This run has no steps.': '本次任务没有步骤。',
  'Pick a run to replay it step by step, see its approval ledger, or export it.': '选择一个任务，逐步回放、查看审批记录或导出。',
  Forget: '移除', Add: '添加', 'Phone IP:port (TCP debugging)': '手机 IP:端口（TCP 调试）', reason: '理由',
  'Stored in keyring': '已存入钥匙串', 'No key stored': '未存储密钥', Steps: '步骤', Tokens: '令牌', Cost: '费用',
};
let lang = $state<'en' | 'zh'>('en');
export function t(s: string): string {
  return lang === 'zh' ? (zh[s] ?? s) : s;
}
export function setLang(l: 'en' | 'zh') {
  lang = l;
}
export function getLang(): 'en' | 'zh' {
  return lang;
}
